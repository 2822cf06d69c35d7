# The tests' oracle: fresh random inputs (never zeros, both signs), outputs that
# start as NaN, and the relative Frobenius error of the whole output in float64.
import numpy as np


def rand(rng, *shape, dtype=np.float32):
    """Uniform in [-1, 1): never zeros, both signs."""
    return (rng.random(shape) * 2 - 1).astype(dtype)


def nans(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype=dtype)


def assert_close(got, want, rtol=1e-5, atol=1e-5):
    """Relative Frobenius error of the whole output in float64, and no NaN left."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    assert not np.isnan(got).any(), "NaN left in the output: an element was not written"
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    assert err <= rtol or np.max(np.abs(got - want)) <= atol, "relative error %g" % err

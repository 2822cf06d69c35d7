# tessel.gemm on NumPy arrays: ragged shapes, leading dimensions, transposed views,
# outputs written in place (no copies), alpha and beta, and every error path.
import numpy as np
import pytest

import tessel
from oracle import assert_close, nans, rand


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 13, 5), (65, 33, 17), (100, 70, 129)])
def test_ragged_shapes(rng, m, n, k):
    a, b = rand(rng, m, k), rand(rng, k, n)
    out = nans(m, n)
    got = tessel.gemm(a, b, out=out)
    assert got is out
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))


def test_allocates_out(rng):
    a, b = rand(rng, 20, 30), rand(rng, 30, 10)
    c = tessel.gemm(a, b)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (20, 10)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64))


def test_alpha_beta(rng):
    a, b, c0 = rand(rng, 33, 21), rand(rng, 21, 40), rand(rng, 33, 40)
    c = c0.copy()
    tessel.gemm(a, b, out=c, alpha=0.5, beta=-2.0)
    assert_close(c, 0.5 * (a.astype(np.float64) @ b) - 2.0 * c0.astype(np.float64))


def test_leading_dimensions_write_in_place(rng):
    # Views into larger arrays: row strides > columns. Only out's window changes.
    big_a, big_b = rand(rng, 40, 50), rand(rng, 30, 60)
    a, b = big_a[3:33, 5:25], big_b[2:22, 10:47]
    big_c = nans(45, 64)
    c = big_c[4:34, 7:44]
    tessel.gemm(a, b, out=c)
    assert_close(big_c[4:34, 7:44], a.astype(np.float64) @ b.astype(np.float64))
    outside = big_c.copy()
    outside[4:34, 7:44] = 0
    assert np.isnan(outside).sum() == big_c.size - 30 * 37, "gemm wrote outside out's window"


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_transposed_views(rng, which):
    a = rand(rng, 26, 19).T if which in ("a", "both") else rand(rng, 19, 26)
    b = rand(rng, 31, 26).T if which in ("b", "both") else rand(rng, 26, 31)
    out = nans(19, 31)
    tessel.gemm(a, b, out=out)
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))


def test_column_strided_operand(rng):
    a = rand(rng, 12, 40)[:, ::2]  # column stride 2
    b = rand(rng, 20, 9)
    out = nans(12, 9)
    tessel.gemm(a, b, out=out)
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))


def test_empty_and_unit_extents(rng):
    a, b = rand(rng, 6, 5), rand(rng, 5, 4)
    assert tessel.gemm(a[:0], b).shape == (0, 4)
    out = nans(6, 4)
    tessel.gemm(a[:, :0], b[:0], out=out)  # K = 0: out = 0 * ... = zeros
    assert (out == 0).all()
    col = nans(6, 8)[:, 3:4]  # a column: extent 1 with column stride 8
    tessel.gemm(a, b[:, 1:2], out=col)
    assert_close(col, a.astype(np.float64) @ b[:, 1:2].astype(np.float64))


def test_negative_strides_refused(rng):
    with pytest.raises(tessel.Error) as e:
        tessel.gemm(rand(rng, 6, 5)[::-1], rand(rng, 5, 4))
    assert e.value.kind == "InvalidArgument" and "is -5, negative" in str(e.value)


def test_sim_target(rng):
    a, b = rand(rng, 9, 7), rand(rng, 7, 11)
    out = nans(9, 11)
    tessel.gemm(a, b, out=out, target="sim")
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))


def test_explicit_plan(rng):
    plan = tessel.default_gemm_plan("cpu", 50, 40, 30)
    assert set(plan.tiles) == {"BM", "BN", "BK"}
    plan.tiles = {"BM": 24, "BN": 32, "BK": 16}  # multiples of the atom (plan.atom_m x atom_n)
    a, b = rand(rng, 50, 30), rand(rng, 30, 40)
    out = nans(50, 40)
    tessel.gemm(a, b, out=out, plan=plan)
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))


def test_one_block_plan_fixes_its_sizes(rng):
    plan = tessel.default_gemm_plan("cpu", 7, 9, 5)  # one block: M, N and K fixed
    assert plan.sizes == {"M": 7, "N": 9, "K": 5} and "sizes(" in str(plan)
    a, b = rand(rng, 7, 5), rand(rng, 5, 9)
    out = nans(7, 9)
    tessel.gemm(a, b, out=out, plan=plan)
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))
    a, out = rand(rng, 6, 5), nans(6, 9)  # another M: refused, then run with no size fixed
    with pytest.raises(tessel.Error) as e:
        tessel.gemm(a, b, out=out, plan=plan)
    assert e.value.kind == "InvalidArgument" and "compiled for M = 7" in str(e.value)
    plan.sizes = {}
    tessel.gemm(a, b, out=out, plan=plan)
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64))


# ---- errors ----------------------------------------------------------------------------

def test_dtype_errors(rng):
    a, b = rand(rng, 4, 5, dtype=np.float64), rand(rng, 5, 6)
    with pytest.raises(TypeError, match=r"gemm: a is float64; gemm takes float32"):
        tessel.gemm(a, b, out=nans(4, 6))
    with pytest.raises(TypeError, match=r"int32"):
        tessel.gemm(np.ones((4, 5), np.int32), b, out=nans(4, 6))
    with pytest.raises(TypeError, match=r"gemm: out is float64"):
        tessel.gemm(rand(rng, 4, 5), b, out=nans(4, 6, dtype=np.float64))


def test_shape_errors(rng):
    a, b = rand(rng, 4, 5), rand(rng, 6, 7)
    with pytest.raises(ValueError, match=r"a is \(4, 5\) and b is \(6, 7\): a's columns \(5\) must equal b's rows \(6\)"):
        tessel.gemm(a, b, out=nans(4, 7))
    with pytest.raises(ValueError, match=r"out is \(4, 8\), the product .* is \(4, 7\)"):
        tessel.gemm(rand(rng, 4, 6), b, out=nans(4, 8))
    with pytest.raises(ValueError, match=r"gemm: a must be 2-D, its shape is \(5,\)"):
        tessel.gemm(rand(rng, 5), b, out=nans(1, 7))
    with pytest.raises(ValueError, match=r"gemm: b must be 2-D"):
        tessel.gemm(rand(rng, 4, 6), rand(rng, 6, 7, 1))


def test_argument_errors(rng):
    a, b = rand(rng, 4, 5), rand(rng, 5, 6)
    with pytest.raises(ValueError, match=r"beta = 1 reads out, but out is None"):
        tessel.gemm(a, b, beta=1.0)
    with pytest.raises(TypeError, match=r"must be an array"):
        tessel.gemm([[1.0]], b)
    ro = nans(4, 6)
    ro.setflags(write=False)
    with pytest.raises(TypeError, match=r"gemm: out is written by the kernel: it must be a writable array"):
        tessel.gemm(a, b, out=ro)
    with pytest.raises(ValueError, match=r"out shares memory with a or b"):
        big = rand(rng, 5, 6)
        tessel.gemm(big[:, :5].copy(), big, out=big[:5])  # out overlaps b
    with pytest.raises(ValueError, match=r"alpha = 2, beta = 0 need row-major operands"):
        tessel.gemm(rand(rng, 5, 4).T, b, out=nans(4, 6), alpha=2.0)


def test_tessel_errors_carry_kind(rng):
    a, b = rand(rng, 4, 5), rand(rng, 5, 6)
    with pytest.raises(tessel.Error) as e:
        tessel.gemm(a, b, target="gpu")
    assert e.value.kind == "InvalidArgument" and "gpu" in str(e.value)
    plan = tessel.default_gemm_plan("cpu", 4, 6, 5)
    plan.tiles = {"BM": 0, "BN": 8, "BK": 8}
    with pytest.raises(tessel.Error) as e:
        tessel.gemm(a, b, plan=plan)
    assert e.value.kind == "Plan" and "BM" in str(e.value)
    assert set(tessel.ERROR_KINDS) >= {"InvalidArgument", "Verify", "Parse", "Plan", "Compile"}

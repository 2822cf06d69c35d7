# The library's kernels (src/ops/library.h) on NumPy arrays against NumPy in float64:
# ragged shapes, row-strided views, outputs poisoned with NaN; refused layouts.
import numpy as np
import pytest

import tessel
from oracle import assert_close, nans, rand


def softmax64(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("m,n", [(1, 1), (37, 75), (5, 300)])
def test_softmax(rng, m, n):
    x = rand(rng, m, n) * 4
    y = nans(m, n)
    assert tessel.softmax(x, out=y) is y
    assert_close(y, softmax64(x))


def test_softmax_float64_and_row_strided_views(rng):
    big = rand(rng, 60, 50, dtype=np.float64) * 4
    x = big[::2, 3:40]  # row stride 100 elements, unit columns
    y_big = nans(30, 64, dtype=np.float64)
    y = y_big[:, :37]
    tessel.softmax(x, out=y)
    assert_close(y, softmax64(x), rtol=1e-12)
    assert np.isnan(y_big[:, 37:]).all()


def test_layernorm(rng):
    m, n = 33, 70
    x, g, b = rand(rng, m, n), rand(rng, n), rand(rng, n)
    y = nans(m, n)
    tessel.layernorm(x, g, b, eps=1e-5, out=y)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1, keepdims=True)
    assert_close(y, (x64 - mu) / np.sqrt(var + 1e-5) * g + b, rtol=1e-5)


def test_row_and_col_sums(rng):
    x = rand(rng, 45, 29)
    s = nans(45)
    tessel.row_sum(x, out=s)
    assert_close(s, x.astype(np.float64).sum(axis=1))
    t = nans(29)
    tessel.col_sum(x, out=t)
    assert_close(t, x.astype(np.float64).sum(axis=0))


def test_add_broadcast(rng):
    a, b = rand(rng, 21, 34), rand(rng, 21)
    c = tessel.add_broadcast(a, b)
    assert_close(c, a.astype(np.float64) + b[:, None])


def test_batched_gemm_with_shared_operand(rng):
    a = rand(rng, 3, 17, 9)
    b = np.broadcast_to(rand(rng, 9, 13), (3, 9, 13))  # batch stride 0
    c = nans(3, 17, 13)
    tessel.batched_gemm(a, b, out=c)
    assert_close(c, np.matmul(a.astype(np.float64), b.astype(np.float64)))


@pytest.mark.parametrize("along,act", [("rows", "relu"), ("cols", "gelu"), ("rows", "none")])
def test_gemm_bias(rng, along, act):
    m, n, k = 19, 23, 11
    a, b = rand(rng, m, k), rand(rng, k, n)
    bias = rand(rng, n if along == "rows" else m)
    c = nans(m, n)
    tessel.gemm_bias(a, b, bias, activation=act, bias_along=along, out=c)
    z = a.astype(np.float64) @ b + (bias[None, :] if along == "rows" else bias[:, None])
    if act == "relu":
        z = np.maximum(z, 0)
    if act == "gelu":
        z = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))
    assert_close(c, z)


@pytest.mark.parametrize("causal", [False, True])
def test_attention(rng, causal):
    B, Hq, Hkv, S, D = 1, 2, 1, 19, 16
    q, k, v = rand(rng, B, Hq, S, D), rand(rng, B, Hkv, S, D), rand(rng, B, Hkv, S, D)
    o = nans(B, Hq, S, D)
    tessel.attention(q, k, v, causal=causal, out=o)
    kk = np.repeat(k.astype(np.float64), Hq // Hkv, axis=1)
    vv = np.repeat(v.astype(np.float64), Hq // Hkv, axis=1)
    s = q.astype(np.float64) @ kk.transpose(0, 1, 3, 2) / np.sqrt(D)
    if causal:
        s = s + np.triu(np.full((S, S), -np.inf), 1)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    assert_close(o, (p / p.sum(axis=-1, keepdims=True)) @ vv, rtol=1e-5)


def test_sim_target_runs_race_free(rng):
    x = rand(rng, 9, 21)
    y = nans(9, 21)
    tessel.softmax(x, out=y, target="sim")
    assert_close(y, softmax64(x))


# ---- refused -----------------------------------------------------------------------------

def test_column_strided_input_refused(rng):
    x = rand(rng, 8, 40)[:, ::2]
    with pytest.raises(tessel.Error) as e:
        tessel.softmax(x)
    assert e.value.kind == "InvalidArgument"
    assert "strides [40, 1]" in str(e.value) and "strides [40, 2]" in str(e.value)


def test_library_shape_and_dtype_errors(rng):
    with pytest.raises(ValueError, match=r"softmax: out is \(3, 4\), expected \(3, 5\)"):
        tessel.softmax(rand(rng, 3, 5), out=nans(3, 4))
    with pytest.raises(ValueError, match=r"layernorm: gamma is \(6,\), expected \(5,\)"):
        tessel.layernorm(rand(rng, 3, 5), rand(rng, 6), rand(rng, 5))
    with pytest.raises(TypeError, match=r"tensor Y is float32 in kernel softmax, the array is float64"):
        tessel.softmax(rand(rng, 3, 5), out=nans(3, 5, dtype=np.float64))
    with pytest.raises(ValueError, match=r"softmax: x must be 2-D, its shape is \(2, 3, 4\)"):
        tessel.softmax(rand(rng, 2, 3, 4))
    with pytest.raises(ValueError, match=r"no library kernel 'nope'"):
        tessel.library("nope")
    with pytest.raises(ValueError, match=r"activation is 'none', 'relu' or 'gelu', not 'tanh'"):
        tessel.gemm_bias(rand(rng, 3, 4), rand(rng, 4, 5), rand(rng, 5), activation="tanh")
    # A dtype no kernel of the library takes is a TypeError, before any kernel is chosen.
    with pytest.raises(TypeError, match=r"softmax: x is int32; softmax takes float32, float64, float16 and bfloat16"):
        tessel.softmax(np.ones((3, 5), np.int32))
    with pytest.raises(TypeError, match=r"layernorm: x is int64; layernorm takes float32, float64"):
        tessel.layernorm(np.ones((3, 5), np.int64), rand(rng, 5), rand(rng, 5))


def test_attention_shape_errors(rng):
    q, k, v = rand(rng, 1, 4, 8, 16), rand(rng, 1, 2, 6, 16), rand(rng, 1, 2, 6, 16)
    with pytest.raises(ValueError, match=r"attention: q is \(1, 4, 8, 16\) and k is \(1, 2, 6, 8\): "
                                         r"their batch \(1, 1\) and head size \(16, 8\) must be equal"):
        tessel.attention(q, rand(rng, 1, 2, 6, 8), v)
    with pytest.raises(ValueError, match=r"attention: q is \(2, 4, 8, 16\) and k is \(1, 2, 6, 16\): their batch"):
        tessel.attention(rand(rng, 2, 4, 8, 16), k, v)
    with pytest.raises(ValueError, match=r"attention: v is \(1, 2, 5, 16\), expected \(1, 2, 6, 16\)"):
        tessel.attention(q, k, rand(rng, 1, 2, 5, 16))
    with pytest.raises(ValueError, match=r"attention: q has 4 heads and k 3: q's must be a multiple of k's"):
        tessel.attention(q, rand(rng, 1, 3, 6, 16), rand(rng, 1, 3, 6, 16))
    with pytest.raises(ValueError, match=r"attention: out is \(1, 4, 8, 8\), expected \(1, 4, 8, 16\)"):
        tessel.attention(q, k, v, out=nans(1, 4, 8, 8))

# Kernels written in Python with the DSL (the C++ capture model), kernels loaded from
# TileIR text, compiled with the default plan or an explicit one, explained, and
# called on arrays; and the DSL's, the parser's and the planner's error paths.
import glob
import os

import numpy as np
import pytest

import tessel
from oracle import assert_close, nans, rand

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def row_softmax():
    """Row softmax, two passes: the online max and sum, then the normalized store."""
    kb = tessel.KernelBuilder("py_softmax")
    M, N, ldx, ldy = kb.size("M"), kb.size("N"), kb.size("ldx"), kb.size("ldy")
    BR, BC = kb.tile("BR"), kb.tile("BC")
    X = kb.tensor("X", [M, N], [ldx, 1], access="in")
    Y = kb.tensor("Y", [M, N], [ldy, 1], access="out")

    def rows(i):
        def online(k, carried):
            m_old, l_old = carried
            x = kb.load(X, [i * BR, k * BC], BR, BC, pad=-np.inf)
            m_new = kb.max(m_old, kb.reduce_max(x, axis=1))
            e = kb.exp(kb.sub(x, m_new))
            l_new = kb.add(kb.mul(l_old, kb.exp(kb.sub(m_old, m_new))), kb.reduce_sum(e, axis=1))
            return [m_new, l_new]

        m, l = kb.serial(tessel.ceil_div(N, BC),
                         [kb.constant(-np.inf, BR, 1), kb.constant(0.0, BR, 1)], online)

        def write(k, carried):
            x = kb.load(X, [i * BR, k * BC], BR, BC)
            kb.store(Y, [i * BR, k * BC], kb.div(kb.exp(kb.sub(x, m)), l))
            return []

        kb.serial(tessel.ceil_div(N, BC), [], write)

    kb.parallel(tessel.ceil_div(M, BR), rows)
    return kb.finish()


def softmax64(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_python_softmax_default_plan(rng):
    k = row_softmax()
    assert k.name == "py_softmax" and k.tile_params == ["BR", "BC"]
    assert [t["name"] for t in k.tensors] == ["X", "Y"]
    x = rand(rng, 37, 75) * 4
    y = nans(37, 75)
    compiled = tessel.compile(k, target="cpu", sizes={"M": 37, "N": 75})
    compiled(X=x, Y=y)
    assert_close(y, softmax64(x))
    # Called again on other arrays of another layout (a row-strided view).
    x2 = (rand(rng, 74, 75) * 4)[::2]
    y2 = nans(37, 75)
    compiled(x2, y2)  # positional: tensors in order
    assert_close(y2, softmax64(x2))
    # Fresh arrays of the first layout: the kept bound launch, with new pointers.
    x3, y3 = rand(rng, 37, 75), nans(37, 75)
    compiled(X=x3, Y=y3)
    assert_close(y3, softmax64(x3))


def test_python_softmax_explicit_plan_on_sim(rng):
    k = row_softmax()
    plan = tessel.Plan(target="sim", tiles={"BR": 4, "BC": 16}, workers=4, worker_rows=4)
    compiled = tessel.compile(k, plan=plan)
    assert compiled.plan == plan and compiled.phases == 1
    x = rand(rng, 9, 40)
    y = nans(9, 40)
    report = compiled(X=x, Y=y)
    assert report.races == 0
    assert_close(y, softmax64(x))
    assert compiled.program(0).startswith("group py_softmax")


def test_run_compiles_for_the_arrays(rng):
    k = row_softmax()
    x = rand(rng, 21, 50)
    y = nans(21, 50)
    tessel.run(k, X=x, Y=y)
    assert_close(y, softmax64(x))


def test_if_else_yields_values(rng):
    # Y = 2 X in the first two row blocks, X + 1 below: a branch with values, one Tile
    # from each branch (a list of them works the same way).
    kb = tessel.KernelBuilder("py_if_else")
    M, N = kb.size("M"), kb.size("N")
    BM, BN = kb.tile("BM"), kb.tile("BN")
    X = kb.tensor("X", [M, N], [N, 1], access="in")
    Y = kb.tensor("Y", [M, N], [N, 1], access="out")

    def block(i, j):
        x = kb.load(X, [i * BM, j * BN], BM, BN)
        y = kb.if_else(i, "<", 2, lambda: kb.add(x, x), lambda: kb.add(x, kb.constant(1.0)))
        kb.store(Y, [i * BM, j * BN], y)

    kb.parallel(tessel.ceil_div(M, BM), tessel.ceil_div(N, BN), block)
    k = kb.finish()
    x = rand(rng, 29, 13)
    want = x.astype(np.float64) + 1
    for target in ("sim", "cpu"):
        y = nans(29, 13)
        compiled = tessel.compile(k, plan=tessel.Plan(target=target, tiles={"BM": 8, "BN": 8}))
        report = compiled(X=x, Y=y)
        assert report.races == 0
        want[:16] = 2 * x[:16].astype(np.float64)
        assert_close(y, want)


def test_scale_kernel_with_scalar_and_inout(rng):
    # The DSL header's example: X *= s.
    kb = tessel.KernelBuilder("scale")
    M, N, ld = kb.size("M"), kb.size("N"), kb.size("ld")
    BM, BN = kb.tile("BM"), kb.tile("BN")
    X = kb.tensor("X", [M, N], [ld, 1], access="inout")
    s = kb.scalar("s")
    kb.parallel(tessel.ceil_div(M, BM), tessel.ceil_div(N, BN),
                lambda i, j: kb.store(X, [i * BM, j * BN],
                                      kb.mul(kb.load(X, [i * BM, j * BN], BM, BN), kb.scalar_value(s))))
    k = kb.finish()
    x = rand(rng, 13, 29)
    want = x.astype(np.float64) * 2.5
    tessel.run(k, X=x, s=2.5)
    assert_close(x, want)


def test_plans_are_inspectable():
    k = tessel.library("softmax")
    plan = tessel.default_plan(k, "cpu", {"M": 100, "N": 1000})
    assert plan.target == "cpu" and set(plan.tiles) == {"BR", "BC"}
    assert "BR=" in str(plan)
    p = tessel.Plan(target="cuda", tiles={"BR": 2, "BC": 256}, workers=64, atom="fma")
    assert (p.target, p.tiles, p.workers, p.atom) == ("cuda", {"BR": 2, "BC": 256}, 64, "fma")
    with pytest.raises(tessel.Error) as e:
        tessel.Plan(tile={"BR": 2})
    assert e.value.kind == "InvalidArgument" and "no field 'tile'" in str(e.value)


def test_explain_returns_the_stages():
    k = row_softmax()
    stages = tessel.explain(k, sizes={"M": 37, "N": 75}, stages=True)
    names = [name for name, _ in stages]
    assert names[0] == "tile-ir" and "plan" in names and "cpu source" in names
    assert "kernel py_softmax" in stages[0][1]
    text = tessel.explain(tessel.compile(k, sizes={"M": 8, "N": 8}))
    assert text.startswith("// ---- tile-ir ----")
    assert "lower" in " ".join(names)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "kernels", "*.tir"))))
def test_tir_files_load_and_match_the_library(path):
    k = tessel.load(path)
    name = os.path.basename(path)[:-4]
    assert k.name == name
    assert tessel.parse(k.text()).text() == k.text()


def test_packaged_tir_file_runs(rng):
    k = tessel.load("softmax")  # the package's copy of kernels/softmax.tir
    x = rand(rng, 11, 23)
    y = nans(11, 23)
    tessel.run(k, X=x, Y=y)
    assert_close(y, softmax64(x))


# ---- errors -----------------------------------------------------------------------------

def test_verify_error():
    kb = tessel.KernelBuilder("bad")
    M = kb.size("M")
    BM = kb.tile("BM")
    X = kb.tensor("X", [M, M], access="in")
    Y = kb.tensor("Y", [M], access="out")
    kb.parallel(tessel.ceil_div(M, BM),
                lambda i: kb.store(Y, [i * BM], kb.load(X, [i * BM, 0], BM, BM)))  # [BM, BM] into a row
    line = test_verify_error.__code__.co_firstlineno + 6  # the kb.parallel(...) line above
    with pytest.raises(tessel.Error) as e:
        kb.finish()
    assert e.value.kind == "Verify"
    # The error names the Python line that recorded the faulty op.
    assert "test_dsl.py:%d" % line in str(e.value) or "test_dsl.py:%d" % (line + 1) in str(e.value), str(e.value)


def test_parse_error():
    with pytest.raises(tessel.Error) as e:
        tessel.parse("kernel broken(sizes M;")
    assert e.value.kind == "Parse" and "line 1" in str(e.value)
    with pytest.raises(tessel.Error) as e:
        tessel.load("/nonexistent/k.tir")
    assert e.value.kind == "InvalidArgument"


def test_plan_error_names_the_tile():
    k = tessel.library("softmax")
    with pytest.raises(tessel.Error) as e:
        tessel.compile(k, plan=tessel.Plan(target="cpu", tiles={"BR": 4}))
    assert e.value.kind == "Plan" and "BC" in str(e.value)
    with pytest.raises(ValueError, match="needs the sizes"):
        tessel.compile(k)
    with pytest.raises(ValueError, match=r"target='sim' but plan.target is 'cpu'"):
        tessel.compile(k, target="sim", plan=tessel.Plan(target="cpu"))


def test_builder_unusable_after_a_body_raises():
    kb = tessel.KernelBuilder("raises")
    M = kb.size("M")

    def body(i):
        raise RuntimeError("user bug")

    with pytest.raises(RuntimeError, match="user bug"):
        kb.parallel(M, body)
    with pytest.raises(tessel.Error, match="unusable"):
        kb.size("N")


def test_finish_inside_a_nest_is_refused():
    kb = tessel.KernelBuilder("early")
    M = kb.size("M")
    with pytest.raises(tessel.Error, match=r"finish\(\) inside an open nest"):
        kb.parallel(M, lambda i: kb.finish())


def test_launch_errors(rng):
    k = tessel.compile(tessel.library("softmax"), sizes={"M": 4, "N": 8})
    x, y = rand(rng, 4, 8), nans(4, 8)
    with pytest.raises(TypeError, match="missing tensor Y"):
        k(X=x)
    with pytest.raises(TypeError, match="has no tensor, scalar or size named Z"):
        k(X=x, Y=y, Z=y)
    with pytest.raises(TypeError, match="tensor X is float32 in kernel softmax, the array is float64"):
        k(X=x.astype(np.float64), Y=y)
    with pytest.raises(tessel.Error) as e:
        k(X=rand(rng, 4, 8, 1), Y=y)
    assert e.value.kind == "InvalidArgument" and "rank 2" in str(e.value)
    with pytest.raises(tessel.Error) as e:
        k(X=rand(rng, 4, 9), Y=y)
    assert e.value.kind == "InvalidArgument" and "N is" in str(e.value)
    with pytest.raises(tessel.Error) as e:
        k(X=x, Y=x)  # Y written over X
    assert e.value.kind == "InvalidArgument" and "overlap" in str(e.value)

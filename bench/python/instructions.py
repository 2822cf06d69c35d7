#!/usr/bin/env python3
"""Instructions per call of a cached 64^3 GEMM, counted by valgrind's callgrind: a
measure of the Python call's overhead that a loaded machine does not blur (a count,
not a timing; bench_overhead.py times).

Each case runs in a fresh interpreter under callgrind twice, with 0 and with --calls
calls after the same warm-up; the difference over --calls is the count per call.
Cases: cpp (tessel::gemm in a C++ loop), python (tessel.gemm on NumPy arrays), binding
(tessel._tessel.gemm_rowmajor on them), torch (tessel.gemm on PyTorch host tensors),
mock (on PyTorch host tensors that say they are on CUDA, with PyTorch's stream query
stubbed: the CUDA path's Python side, as in count_calls.py). OPENBLAS_NUM_THREADS=1
keeps NumPy's OpenBLAS threads from spinning into the count. Minutes a case.

    python bench/python/instructions.py [--calls 1000] [cpp python binding torch mock]
"""
import argparse
import os
import re
import subprocess
import sys


def workload(mode, n):
    import collections

    import numpy as np

    import tessel
    from tessel import _tessel
    rng = np.random.default_rng(1)
    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    c = np.empty((64, 64), np.float32)
    tessel.gemm(a, b, out=c)
    _tessel._bench_cpp_gemm(a, b, c, 1)
    _tessel.gemm_rowmajor(a, b, c, 1.0, 0.0, "", None, 0)
    gemm, binding = tessel.gemm, _tessel.gemm_rowmajor
    if mode in ("torch", "mock"):
        import torch
        a, b, c = (torch.from_numpy(x) for x in (a, b, c))
        if mode == "mock":
            class MockCuda(torch.Tensor):
                is_cuda = True
                __torch_function__ = torch._C._disabled_torch_function_impl

            torch._C._cuda_getCurrentRawStream = collections.defaultdict(int).__getitem__
            a, b, c = (torch.Tensor._make_subclass(MockCuda, x) for x in (a, b, c))
        gemm(a, b, out=c)
        gemm(a, b, out=c)
    if mode == "cpp":
        _tessel._bench_cpp_gemm(a, b, c, n)
    elif mode == "binding":
        for _ in range(n):
            binding(a, b, c, 1.0, 0.0, "", None, 0)
    else:
        for _ in range(n):
            gemm(a, b, out=c)


def count(mode, n):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    err = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          os.path.abspath(__file__), "--run", mode, str(n)],
                         env=env, capture_output=True, text=True, check=True).stderr
    return int(re.search(r"Collected : (\d+)", err).group(1))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--run":
        workload(sys.argv[2], int(sys.argv[3]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("cases", nargs="*", default=["cpp", "python", "binding", "torch", "mock"])
    args = p.parse_args()
    cpp = None
    for mode in args.cases:
        per_call = (count(mode, args.calls) - count(mode, 0)) / args.calls
        if mode == "cpp":
            cpp = per_call
        print("%-8s %8.0f instructions a call%s" % (
            mode, per_call, "" if cpp is None or mode == "cpp" else ", %.0f over the C++ call" % (per_call - cpp)),
            flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Python work of one tessel.gemm call on CUDA tensors, counted on a machine with
no GPU (a count, not a timing; bench_overhead.py times the real thing on a GPU).

PyTorch CPU tensors stand in for CUDA tensors: a Tensor subclass whose is_cuda is
True, and PyTorch's current-stream query replaced by a C function that answers the
default stream (0). tessel's Python side takes the CUDA path (the stream check, the
DLPack capsules) and the binding then runs the GEMM on the host, since the capsules
say so. sys.setprofile counts the Python functions and the C functions that one call
runs, from tessel.gemm's entry to its return, after a warm call (--list names them),
and sys.settrace the bytecodes it runs.
NumPy arrays are counted beside them. --time also times each case on the host.

    python bench/python/count_calls.py [--list] [--json]
"""
import argparse
import collections
import json
import sys

import numpy as np

import tessel


def count(fn):
    """(Python calls, C calls, bytecodes run, the calls' names) of one fn(). C calls
    are those of builtin functions (nanobind's functions, types and properties are
    not seen); bytecodes count the rest of the interpreter's work (each attribute
    or global lookup, each operation), in tessel's functions and the lambda."""
    events = collections.Counter()
    names = []

    def profile(frame, event, arg):
        if event == "call":
            events["python"] += 1
            names.append("py " + frame.f_code.co_name)
        elif event == "c_call":
            events["c"] += 1
            names.append("c  " + getattr(arg, "__qualname__", getattr(arg, "__name__", repr(arg))))

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        return local

    def local(frame, event, arg):
        if event == "opcode":
            events["op"] += 1
        return local

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    # The setprofile(None) call itself is the last C call seen.
    return events["python"], events["c"] - 1, events["op"], names[:-1]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--list", action="store_true", help="name every call")
    p.add_argument("--json", action="store_true")
    p.add_argument("--time", action="store_true",
                   help="also time each case on the host: the median of 40 rounds of 200 calls, less the "
                        "C++ call's (tessel::gemm in a C++ loop); noisy on a loaded machine")
    args = p.parse_args()
    n = args.size
    rng = np.random.default_rng(1)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    cases = {"numpy": lambda: tessel.gemm(a, b, out=c)}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        class MockCuda(torch.Tensor):  # a host tensor that says it is on CUDA
            is_cuda = True
            __torch_function__ = torch._C._disabled_torch_function_impl

        # The current raw stream of any device: 0, the default stream (a C function).
        torch._C._cuda_getCurrentRawStream = collections.defaultdict(int).__getitem__
        ta, tb, tc = (torch.Tensor._make_subclass(MockCuda, torch.from_numpy(x)) for x in (a, b, c))
        cases["torch (mock CUDA, default stream)"] = lambda: tessel.gemm(ta, tb, out=tc)
        th = [torch.from_numpy(x) for x in (a, b, c)]
        cases["torch (host)"] = lambda: tessel.gemm(th[0], th[1], out=th[2])
    out = {}
    for name, fn in cases.items():
        fn()  # warm: compiled, caches filled
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert np.abs(c - want).max() < 1e-3 * n, "wrong answer"
        py, cc, ops, names = count(fn)
        out[name] = {"python_calls": py, "c_calls": cc, "bytecodes": ops, "calls": names}
    if args.time:
        import statistics
        import timeit
        from tessel import _tessel
        rounds = {name: [] for name in ["C++"] + list(cases)}
        for _ in range(40):
            rounds["C++"].append(_tessel._bench_cpp_gemm(a, b, c, 200))
            for name, fn in cases.items():
                rounds[name].append(timeit.timeit(fn, number=200) / 200 * 1e6)
        cpp = statistics.median(rounds["C++"])
        for name in cases:
            out[name]["us_over_cpp"] = statistics.median(rounds[name]) - cpp
        out["cpp_us"] = cpp
    if args.json:
        print(json.dumps(out if args.list else {k: v if k == "cpp_us" else {f: v[f] for f in v if f != "calls"}
                                                    for k, v in out.items()}, indent=2))
        return
    for name, r in out.items():
        if name == "cpp_us":
            continue
        print("%-36s %2d Python calls, %2d C calls, %3d bytecodes%s"
              % (name + ":", r["python_calls"], r["c_calls"], r["bytecodes"],
                 ", %.2f us over C++'s %.2f" % (r["us_over_cpp"], out["cpp_us"]) if args.time else ""))
        if args.list:
            for call in r["calls"]:
                print("    " + call)


if __name__ == "__main__":
    main()

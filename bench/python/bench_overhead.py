#!/usr/bin/env python3
"""The cost of calling tessel from Python: a cached 64^3 GEMM (a benchmark, not a test).

Per round, interleaved: the C++ baseline (tessel::gemm called `--calls` times in a
C++ loop on the same arrays, inside the module), tessel.gemm from Python, the
binding alone (tessel._tessel.gemm_rowmajor, no Python wrapper; on CUDA given the
DLPack capsules tessel.gemm makes, torch.utils.dlpack.to_dlpack's) and, with PyTorch,
torch.matmul(a, b, out=c). Each is the mean host wall time per call over the round;
the report gives the medians over rounds and the median overhead, Python minus C++,
by host wall and by this thread's CPU time (which leaves out other processes on a
loaded machine). On CUDA (with PyTorch and a GPU) the same on device tensors:
launches are asynchronous, so it is host time per call with one synchronize per
round. It also reports `import tessel`'s time in a fresh interpreter.

    python bench/python/bench_overhead.py [--size 64] [--rounds 15] [--calls 2000] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import tessel
from tessel import _tessel


def per_call_us(fn, calls, sync=None):
    """(host wall, this thread's CPU time) per call in us. The CPU time leaves out
    what other processes take on a loaded machine; on CUDA the wall is the one."""
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        fn()
    if sync:
        sync()
    return ((time.perf_counter() - wall) / calls * 1e6, (time.thread_time() - cpu) / calls * 1e6)


def cpp_per_call_us(a, b, c, calls, sync):
    wall, cpu = time.perf_counter(), time.thread_time()
    _tessel._bench_cpp_gemm(a, b, c, calls)
    if sync:
        sync()
    return ((time.perf_counter() - wall) / calls * 1e6, (time.thread_time() - cpu) / calls * 1e6)


def import_ms(times=7):
    """The median wall time of `import tessel` in a fresh interpreter, and the module's
    share (tessel._tessel, the nanobind module with the C++ library), by -X importtime."""
    total, module = [], []
    for _ in range(times):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import tessel"], check=True,
                             capture_output=True, text=True).stderr
        for line in err.splitlines():  # "import time: self [us] | cumulative | name"
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] in ("tessel", "tessel._tessel"):
                (total if parts[2] == "tessel" else module).append(int(parts[1]) / 1e3)
    return statistics.median(total), statistics.median(module)


def measure(device, size, rounds, calls):
    torch = sys.modules.get("torch")
    if device == "cpu":
        rng = np.random.default_rng(1)
        a = rng.random((size, size), dtype=np.float32)
        b = rng.random((size, size), dtype=np.float32)
        c = np.empty((size, size), np.float32)
        sync = None
    else:
        a = torch.rand(size, size, device="cuda")
        b = torch.rand(size, size, device="cuda")
        c = torch.empty(size, size, device="cuda")
        sync = torch.cuda.synchronize
    # Warm: compile (or load from the disk cache) and check the answer once.
    tessel.gemm(a, b, out=c)
    if sync:
        sync()
    want = np.asarray(a.cpu() if device == "cuda" else a, np.float64) @ np.asarray(b.cpu() if device == "cuda" else b, np.float64)
    got = np.asarray(c.cpu() if device == "cuda" else c, np.float64)
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err < 1e-5, "wrong answer: relative error %g" % err

    cases = {
        "cpp": lambda: cpp_per_call_us(a, b, c, calls, sync),
        "python": lambda: per_call_us(lambda: tessel.gemm(a, b, out=c), calls, sync),
        "binding": lambda: per_call_us(lambda: _tessel.gemm_rowmajor(a, b, c, 1.0, 0.0, "", None, 0), calls, sync),
    }
    if device == "cuda":
        # What tessel.gemm hands the binding: capsules made on every call (the tensors
        # themselves would go through Tensor.__dlpack__, which tessel.gemm avoids).
        cap = torch.utils.dlpack.to_dlpack
        cases["binding"] = lambda: per_call_us(
            lambda: _tessel.gemm_rowmajor(cap(a), cap(b), cap(c), 1.0, 0.0, "", None, 0), calls, sync)
    if torch is not None:
        ta, tb, tc = (torch.as_tensor(x) for x in (a, b, c)) if device == "cpu" else (a, b, c)
        cases["torch.matmul"] = lambda: per_call_us(lambda: torch.matmul(ta, tb, out=tc), calls, sync)
        if device == "cpu":  # tessel.gemm on PyTorch host tensors: the capsules' share
            cases["python_torch"] = lambda: per_call_us(lambda: tessel.gemm(ta, tb, out=tc), calls, sync)
    results = {name: [] for name in cases}
    for r in range(rounds):
        order = list(cases) if r % 2 == 0 else list(reversed(cases))  # counterbalanced
        for name in order:
            results[name].append(cases[name]())
    report = {}
    for clock, i in (("wall", 0), ("cpu", 1)):
        rep = {name: statistics.median(v[i] for v in results[name]) for name in cases}
        for what in ("python", "binding", "python_torch"):
            if what not in results:
                continue
            rep["overhead_%s_minus_cpp" % what] = statistics.median(
                p[i] - q[i] for p, q in zip(results[what], results["cpp"]))
        report[clock] = rep
    return report


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    try:
        import torch  # noqa: F401  (beside tessel when present)
    except ImportError:
        torch = None
    out = {"size": args.size, "rounds": args.rounds, "calls": args.calls, "loadavg": os.getloadavg()[0],
           "tessel": tessel.__version__, "torch": getattr(torch, "__version__", None), "devices": {}}
    out["import_ms"], out["import_module_ms"] = import_ms()
    out["devices"]["cpu"] = measure("cpu", args.size, args.rounds, args.calls)
    if torch is not None and torch.cuda.is_available():
        out["devices"]["cuda"] = measure("cuda", args.size, args.rounds, args.calls)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print("%d^3 fp32 GEMM, cached; median of %d rounds of %d calls; load average %.1f"
          % (args.size, args.rounds, args.calls, out["loadavg"]))
    print("import tessel: %.1f ms (tessel._tessel %.1f ms), median of 7 fresh interpreters"
          % (out["import_ms"], out["import_module_ms"]))
    for device, both in out["devices"].items():
        for clock, r in both.items():
            print("%s, %s: C++ tessel::gemm %.2f us/call, tessel.gemm %.2f us, binding alone %.2f us%s"
                  % (device, clock, r["cpp"], r["python"], r["binding"],
                     ", torch.matmul %.2f us" % r["torch.matmul"] if "torch.matmul" in r else ""))
            print("%s, %s: Python overhead over C++ %.2f us (the binding alone %.2f us%s)"
                  % (device, clock, r["overhead_python_minus_cpp"], r["overhead_binding_minus_cpp"],
                     "; tessel.gemm on PyTorch host tensors %.2f us" % r["overhead_python_torch_minus_cpp"]
                     if "python_torch" in r else ""))


if __name__ == "__main__":
    main()

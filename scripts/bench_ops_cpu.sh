#!/usr/bin/env bash
# Softmax and layernorm on the CPU: tessel's library kernels (bench/bench_ops_cpu.cpp)
# beside NumPy, in one run, as GB/s (bytes read + written once) and ratios.
#   scripts/bench_ops_cpu.sh [--rounds R] [--threads T] [--shapes MxN,...]
# BENCH_OPS_CPU=PATH uses that executable instead of building build/bench_ops_cpu
# (scripts/device_check.sh, where CMake's packages are missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${BENCH_OPS_CPU:-}
if [ -z "$bench" ]; then
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C build bench_ops_cpu >/dev/null
  bench=build/bench_ops_cpu
fi
out=$(mktemp)
"$bench" "$@" | tee "$out"
python3 - "$out" <<'PY'
import re, sys, time
import numpy as np
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("tessel ")]
def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
def layernorm(x, g, b):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b
print("| kernel | shape | tessel GB/s | NumPy GB/s | tessel / NumPy |")
print("|---|---|---:|---:|---:|")
for r in rows:
    name, shape, gbs = r[1], r[2], float(r[7])
    m, n = map(int, shape.split("x"))
    x = np.random.default_rng(1).uniform(-1, 1, (m, n)).astype(np.float32)
    g = np.ones(n, np.float32); b = np.zeros(n, np.float32)
    f = (lambda: softmax(x)) if name == "softmax" else (lambda: layernorm(x, g, b))
    f(); ts = []
    for _ in range(5):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    t = sorted(ts)[2]
    np_gbs = 2 * m * n * 4 / t / 1e9
    print(f"| {name} | {shape} | {gbs:.2f} | {np_gbs:.2f} | {gbs / np_gbs:.2f} |")
PY
rm -f "$out"

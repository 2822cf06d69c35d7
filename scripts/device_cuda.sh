#!/bin/bash
# On the GPU machine (the `run` tool): builds tessel with the machine's CUDA, runs
# the cuda and gpu test labels, the mma.sync plan sweep, the barrier on/off and
# pipelining comparisons, then the cuda benchmark vs cuBLAS, and (PEERS=1) the
# PyTorch and Triton anchors. At most 8 files go under $OUT (the tool's limit); a
# short table comes last.
# GoogleTest travels as Debian packages in .deb/ (apt-get download libgtest-dev googletest).
# The machine lacks the netlib BLAS testers, so their paths point nowhere (the BLAS
# tests are CPU-only and CI runs them).
#   scripts/device_cuda.sh [--quick]      (--quick: bench_gemm_cuda on 3 shapes)
#   PLANS="sweep pipelining" scripts/device_cuda.sh   (which plan comparisons; default all four)
#   PLANS=ops: softmax and layernorm GroupIR programs (bench_cuda_ops) beside PyTorch
# Files: machine.txt build.log tests.log ptxas.txt plans.txt bench.txt bench.jsonl (+ peers.txt)
set -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tessel-out}
mkdir -p "$OUT" /tmp/gt
for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/machine.txt" 2>&1
nvcc --version | tail -2 >> "$OUT/machine.txt"
nproc >> "$OUT/machine.txt"
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" \
    -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 300 ninja -C build-dev -j16 test_cuda test_gpu bench_gemm_cuda bench_cuda_plans bench_cuda_ops tessel_cli; } > "$OUT/build.log" 2>&1 ||
  { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -60; exit 1; }
echo "build done at $SECONDS s"
B=build-dev
# Correctness first (ctest -V keeps test_cuda's ptxas lines), then the plan
# comparisons, then tessel vs cuBLAS; each step time-limited, each file written as
# it goes so that a call cut short still returns what ran.
(cd $B && timeout 200 ctest -L 'cuda|gpu' -V -j4) > "$OUT/tests.log" 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "^[0-9]+: \[ptxas\]" "$OUT/tests.log" | sed 's/^[0-9]*: //' > "$OUT/ptxas.txt"
grep -E "tests passed|tests failed|Skipped|Failed|\*\*\*" "$OUT/tests.log" | tail -12
PLANS=${PLANS:-sweep barriers pipelining ops}
{ for step in $PLANS; do case $step in
    sweep) echo "## sweep: mma.sync and wgmma plans at 4096^3"; timeout 100 $B/bench_cuda_plans sweep --rounds 2; echo "rc=$?";;
    barriers) echo "## barriers: planning on vs off (fp32, 8 seed shapes)"; timeout 80 $B/bench_cuda_plans barriers --rounds 4; echo "rc=$?";;
    pipelining) echo "## pipelining: window 1/2 sync, 3/4 async (fp32)"; timeout 220 $B/bench_cuda_plans pipelining --rounds 4; echo "rc=$?";;
    ops) echo "## ops: softmax and layernorm GroupIR programs, then PyTorch (GB/s = bytes read + written once / time)"
         timeout 300 $B/bench_cuda_ops --rounds 5; echo "rc=$?"; timeout 120 python3 - <<'PY'; echo "rc=$?";;
import torch
def bench(f, x):
    for _ in range(3): f(x)
    torch.cuda.synchronize(); ts = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10): f(x)
        e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) * 100)
    return sorted(ts)[2]
for m, n in [(8192, 8192), (32768, 1024), (4096, 50257)]:
    for dt, eb in [(torch.float32, 4), (torch.bfloat16, 2)]:
        x = torch.randn(m, n, device="cuda", dtype=dt)
        g, b = torch.randn(n, device="cuda", dtype=dt), torch.randn(n, device="cuda", dtype=dt)
        for name, f in [("softmax", lambda x: torch.softmax(x, -1)),
                        ("layernorm", lambda x: torch.nn.functional.layer_norm(x, (n,), g, b, 1e-5))]:
            t = bench(f, x)
            print(f"| torch {name} {str(dt)[6:]} | {m}x{n} | {t:.1f} | {2 * m * n * eb / t / 1e3:.0f} |", flush=True)
PY
  esac; echo; done
} > "$OUT/plans.txt" 2>&1
echo "plans done at $SECONDS s"
grep -E "CHECK FAILED|rc=" "$OUT/plans.txt"
grep -E "^\| (bf16|tf32) " "$OUT/plans.txt" | cut -c1-150
timeout 100 $B/bench_gemm_cuda "$@" --json "$OUT/bench.jsonl" > "$OUT/bench.txt" 2>&1
echo "bench rc=$? at $SECONDS s"
if [ "${PEERS:-0}" = 1 ]; then
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/peers/gpu_peers.py > "$OUT/peers.txt" 2>&1
  grep -E "^(fp32|tf32|bf16) (32x32x32|127x193x61|4096x4096x4096)" "$OUT/peers.txt"
fi
cat "$OUT/machine.txt"
grep -E "^\| (4096|8192)\^2" "$OUT/plans.txt" | cut -c1-120
cat "$OUT/bench.txt"

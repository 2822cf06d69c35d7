#!/bin/bash
# On the GPU machine (the `run` tool): builds tessel with the machine's CUDA, runs
# the cuda and gpu test labels, then the cuda benchmark, and (PEERS=1) the PyTorch
# and Triton anchors. Logs and results go under $OUT; a short table comes last.
# GoogleTest travels as Debian packages in .deb/ (apt-get download libgtest-dev googletest).
#   scripts/device_cuda.sh [--quick]
set -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tessel-out}
mkdir -p "$OUT" /tmp/gt
for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/machine.txt" 2>&1
nvcc --version | tail -2 >> "$OUT/machine.txt"
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" > "$OUT/cmake.log" 2>&1 ||
  { tail -30 "$OUT/cmake.log"; exit 1; }
ninja -C build-dev -j16 test_cuda test_gpu bench_gemm_cuda tessel_cli > "$OUT/build.log" 2>&1 ||
  { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -60; exit 1; }
(cd build-dev && ctest -L 'cuda|gpu' --output-on-failure -j4) > "$OUT/tests.log" 2>&1
echo "ctest rc=$?"
build-dev/test_gpu 2>&1 | grep -E "^\[gpu\]|FAIL" > "$OUT/gpu_errors.txt"
build-dev/test_cuda 2>&1 | grep -E "^\[ptxas\]" > "$OUT/ptxas.txt"
build-dev/bench_gemm_cuda "$@" --json "$OUT/bench.jsonl" > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"
if [ "${PEERS:-0}" = 1 ]; then
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/peers/gpu_peers.py > "$OUT/peers.txt" 2>&1
  grep -E "^(fp32|tf32|bf16) (32x32x32|127x193x61|4096x4096x4096)" "$OUT/peers.txt"
fi
cat "$OUT/machine.txt"
grep -E "tests passed|tests failed|Skipped|Failed|\*\*\*" "$OUT/tests.log" | tail -15
cat "$OUT/bench.txt"

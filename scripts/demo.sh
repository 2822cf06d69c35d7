#!/usr/bin/env bash
# The main job: compiles tessel's GEMM for this CPU and runs the seed shapes with
# the FP64 check, beside OpenBLAS (its AVX-512 kernels: the peer to beat), one thread.
# OpenBLAS 0.3.21 falls back to SSE3 kernels on AVX-512 Xeons it does not know, so
# the core type is named (override with OPENBLAS_BENCH_CORETYPE).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build bench_gemm_cpu tessel_cli
env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="${OPENBLAS_BENCH_CORETYPE:-Cooperlake}" build/bench_gemm_cpu "$@"

#!/bin/bash
# On the GPU machine (the `run` tool, which carries .deb/): configures this tree with
# CMake in BUILD_DIR (Release) and builds TARGETS. GoogleTest and nlohmann-json, which
# that machine lacks, come from the Debian packages in .deb/ (`apt-get download
# googletest libgtest-dev libgmock-dev nlohmann-json3-dev` there, here), unpacked
# into /tmp/gt; the netlib BLAS testers are CPU-only, so their paths point nowhere.
# The log goes to $OUT/build.log; on a failure its errors are printed and the exit
# status is 1. Measurement scripts in docs/results call it first:
#   bash scripts/device_cmake.sh build-dev test_cuda test_gpu bench_gemm_cuda
set -o pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR TARGET..." >&2; exit 2; }
cd "$(dirname "$0")/.."
BUILD=$1
shift
OUT=${OUT:-/tmp/tessel-out}
mkdir -p "$OUT" /tmp/gt
for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
JS=$(dirname "$(find /tmp/gt -name nlohmann_jsonConfig.cmake | head -1)")
export PATH=/usr/local/cuda/bin:$PATH
{ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -Dnlohmann_json_DIR="$JS" \
    -DCMAKE_PREFIX_PATH=/tmp/gt/usr -DTESSEL_BLAS_TESTERS=/nonexistent \
    -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  ninja -C "$BUILD" -j"$(nproc)" "$@"; } > "$OUT/build.log" 2>&1 ||
  { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }

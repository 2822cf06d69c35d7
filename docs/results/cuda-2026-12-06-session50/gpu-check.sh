#!/bin/bash
# Fiftieth session: every cuda/gpu test under a 420 s limit (the forty-ninth
# session's 200 s cut CudaGemm.WgmmaPlansEveryWindow short), then the square bars.
# One `run` call, carry [".deb"]. No GPU code changed since 9d338d3.
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
JS=$(dirname "$(find /tmp/gt -name nlohmann_jsonConfig.cmake | head -1)")
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -Dnlohmann_json_DIR="$JS" \
    -DCMAKE_PREFIX_PATH=/tmp/gt/usr -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 200 ninja -C build-dev -j16 test_gpu test_cuda tessel_cli bench_gemm_cuda; } > "$OUT/build.log" 2>&1 ||
  { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
echo "built at $SECONDS s"
(cd build-dev && timeout 420 ctest -L 'cuda|gpu' -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
grep -E "WgmmaPlansEveryWindow" $OUT/tests.log | tail -2
[ $SECONDS -lt 520 ] && timeout 70 build-dev/bench_gemm_cuda --dtypes bf16,fp16,tf32,fp32 \
  --shapes 4096x4096x4096,8192x8192x8192 > $OUT/squares.txt 2>&1
echo "== squares (dtype shape dev-x)"; tail -n +3 $OUT/squares.txt | awk '{print $1, $2, $8}' | paste -sd' '

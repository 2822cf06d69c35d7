#!/bin/bash
# fp32 fma atom fed by tma: every cuda/gpu test, then bench vs default; one call
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 &
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 240 ninja -C build-dev -j14 test_gpu test_cuda; } > "$OUT/build.log" 2>&1 || { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
wait
echo "built at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,5000x3000x2500,3000x2000x1500,6000x4000x3000
timeout 200 /tmp/bgc-new --dtypes fp32 --shapes $S --plan "" --plan copy=tma,window=4 --plan copy=tma,window=3 \
  --plan copy=tma,window=2 --plan tile=128x128x32,copy=tma,window=3 > $OUT/bench.txt 2>&1
echo "bench rc=$? at $SECONDS s"
cat $OUT/bench.txt
(cd build-dev && timeout 220 ctest -L 'cuda|gpu' -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | tail -12

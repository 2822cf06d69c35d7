#!/bin/bash
# fp32 defaults through tensor maps: tests, bench of the defaults, sanitizers
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 &
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 200 ninja -C build-dev -j14 test_gpu; } > "$OUT/build.log" 2>&1 || { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
wait
echo "built at $SECONDS s"
timeout 120 build-dev/test_gpu --gtest_filter='CudaGemm.FmaAtom*:CudaGemm.DeepFp32*:CudaGemm.DoubleBuffered*:CudaGemm.BetaAlpha*:CudaGemm.RandomShapes:CudaGemm.SeedShapes*:CudaGemm.Fp32FewTiles*' > $OUT/tests.txt 2>&1
echo "tests rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|OK \]|FAILED \]" $OUT/tests.txt | tail -14
S=4096x4096x4096,8192x8192x8192,3500x2500x1800,7000x3000x2000,1500x2500x700,2048x2048x2048,1100x1000x600,4000x6000x1024
timeout 130 /tmp/bgc-new --dtypes fp32 --shapes $S > $OUT/bench.txt 2>&1
echo "bench rc=$? at $SECONDS s"; cat $OUT/bench.txt
for tool in memcheck synccheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool build-dev/test_gpu --gtest_filter='CudaGemm.FmaAtomThroughTensorMapsSmallShapes' > $OUT/$tool.txt 2>&1
  echo "$tool rc=$? at $SECONDS s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/$tool.txt | tr '\n' ' ')"
done

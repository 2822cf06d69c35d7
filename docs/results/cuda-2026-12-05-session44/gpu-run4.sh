#!/bin/bash
# Forty-fourth session, fourth call: the final tree (GemmBeta::Zero on wgmma plans
# only; unused_after_run through roles and branches): the tma pipeline's GPU tests
# (persistent grids, every variant, beta 0 and 0.5) and cuda GEMM tests of beta,
# alpha and the fp32 tiles; then .snap/old (2d37c54) beside this tree, beta 0.
# Carry [".deb", ".snap"].
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
JS=$(dirname "$(find /tmp/gt -name nlohmann_jsonConfig.cmake | head -1)")
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -Dnlohmann_json_DIR="$JS" \
    -DCMAKE_PREFIX_PATH=/tmp/gt/usr -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 200 ninja -C build-dev -j16 test_gpu test_cuda; } > /tmp/build.log 2>&1 || { grep -E -A3 "error|FAILED" /tmp/build.log | head -40; exit 1; }
wait
echo "built at $SECONDS s"
(cd build-dev && timeout 130 ctest -R 'TmaPipelineGpu|TmaGpu|CudaGemm.Beta|CudaGemm.Fma|CudaGemm.Deep' -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
for b in old new; do
  [ $SECONDS -gt 290 ] && break
  echo "== $b" >> $OUT/ab.txt; timeout 30 /tmp/bgc-$b --dtypes fp32,bf16 --shapes 3000x2000x1500,2000x3000x1200 >> $OUT/ab.txt 2>&1
done
awk '/^== /{r=$0; next} $1=="fp32"||$1=="bf16" {print r, $1, $2, $8}' $OUT/ab.txt

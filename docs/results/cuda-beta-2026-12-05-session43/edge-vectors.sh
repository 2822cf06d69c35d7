#!/bin/bash
# Edge tiles with rows on 16 bytes store float4s in the rolled staged loop
# (emit_staged_vectors): the GPU tests of the tma pipeline and the cuda GEMM, then
# beta 0 against 4ace2b7 (.snap/old, before the rolled edge forms), one round.
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
STEPS="" bash scripts/device_check.sh > $OUT/build.txt 2>&1 || { tail -20 $OUT/build.txt; exit 1; }
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 & bash scripts/device_bench_gemm.sh .snap/old old >> $OUT/bbuild.log 2>&1; wait
echo "built at $SECONDS s"
(cd tests/cuda && timeout 150 /tmp/o-cur/cuda_tests --gtest_filter='TmaPipelineGpu.*:TmaGpu.*' --gtest_brief=1) > $OUT/cuda-tests.txt 2>&1
echo "cuda_tests rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/cuda-tests.txt | tr '\n' ' ')"
timeout 100 /tmp/o-cur/gpu_tests --gtest_filter='CudaGemm.*' --gtest_brief=1 > $OUT/gpu-tests.txt 2>&1
echo "gpu_tests rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/gpu-tests.txt | tr '\n' ' ')"
S=2049x1023x257,3000x2000x1500,1537x2050x1000,1000x1000x1001,2050x1030x1000,4096x4096x4096
for b in old new; do
  TESSEL_CACHE_DIR=/tmp/c-$b timeout 60 /tmp/bgc-$b --dtypes bf16,tf32 --shapes $S > $OUT/vec-$b.txt 2>&1
  echo "$b rc=$?: $(tail -n +3 $OUT/vec-$b.txt | awk '{print $1, $2, $8}' | paste -sd' ')"
done

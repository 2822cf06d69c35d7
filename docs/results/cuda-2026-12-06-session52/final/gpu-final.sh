#!/bin/bash
# Fifty-second session, sixth call: this session's final tree (7478ce8): every cuda and
# gpu test but the wgmma window sweep (no wgmma code changed), compute-sanitizer over
# the fp32 tile tests, and the four dtypes' squares. One `run` call, carry [".deb"].
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1) &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -1 /tmp/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
for tool in memcheck racecheck synccheck; do
  [ $SECONDS -gt 450 ] && break
  timeout 50 compute-sanitizer --tool $tool build-dev/test_gpu \
    --gtest_filter='CudaGemm.FmaAtomThroughTensorMapsSmallShapes:CudaGemm.DeepFp32TilesMatchTheOracle' > $OUT/san-$tool.txt 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-$tool.txt | tr '\n' ' ')"
done
[ $SECONDS -lt 520 ] && timeout 70 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes 4096x4096x4096,8192x8192x8192 > $OUT/squares.txt 2>&1
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {print $1, $2, $8}' $OUT/squares.txt

#!/bin/bash
# Fifty-fourth session, fourth call: the final tree's cuda/gpu tests (but the wgmma
# window sweep), memcheck over the cluster plans' GPU test, and bf16 / fp16 at shapes
# whose default now takes clusters. carry [".deb"].
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -1 /tmp/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.txt 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.txt | grep -v Skipped | tail -12
timeout 120 compute-sanitizer --tool memcheck build-dev/test_gpu --gtest_filter='CudaGemm.ClusterPlansMatchTheOracle' \
  > $OUT/san-memcheck.txt 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/san-memcheck.txt | tr '\n' ' ')"
timeout 60 /tmp/bgc-new --dtypes bf16,fp16 --shapes 1800x1800x1800,2048x2048x2048,3064x5624x1888,5768x2472x1928 \
  > $OUT/defaults.txt 2>&1
awk '$1=="bf16"||$1=="fp16"{print $1, $2, $8, $NF}' $OUT/defaults.txt

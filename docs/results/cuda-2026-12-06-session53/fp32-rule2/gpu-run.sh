#!/bin/bash
# Fifty-third session, fifth call: the 128x64 tile rule (kFmaMid* in
# src/ops/gemm.cpp) without its bound on 128x128 tiles. carry [".deb", ".snap"];
# .snap/old is the tree of 45f0c36 (the rule for fewer than 264 128x128 tiles only).
# Builds bench_gemm_cuda old and new and this tree's GPU tests; runs the cuda/gpu tests
# but the wgmma window sweep, old and new defaults in alternating rounds on large
# shapes whose default was 128x128 tiles, memcheck over the fma atom's small
# tensor-map shapes, and the four dtypes' squares with the new build.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.txt 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.txt | grep -v Skipped | tail -12
S=3000x2000x1500,3500x2500x1800,4000x3000x600,6000x5000x1000,2200x1800x1200,3000x4000x800,4096x4000x1024
S=$S,5000x2000x700,3000x3000x300,8192x8000x512,2300x2100x1000,7000x3000x2000,6000x4000x3000,4096x4096x4096
for round in 1 2; do for b in old new; do
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 60 /tmp/bgc-$b --dtypes fp32 --shapes $S >> $OUT/ab.txt 2>&1
done; done
echo "== fp32, cuBLAS time / tessel time (device): round impl: shape ratio ..."
awk '/^== /{r=$0; next} $1=="fp32" {print r, $2, $8}' $OUT/ab.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s %s", $3, $4} END {print ""}'
for tool in memcheck; do
  timeout 60 compute-sanitizer --tool $tool build-dev/test_gpu \
    --gtest_filter='CudaGemm.FmaAtomThroughTensorMapsSmallShapes' > $OUT/san-$tool.txt 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-$tool.txt | tr '\n' ' ')"
done
[ $SECONDS -lt 500 ] && timeout 60 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes 4096x4096x4096,8192x8192x8192 > $OUT/squares.txt 2>&1
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {print $1, $2, $8}' $OUT/squares.txt

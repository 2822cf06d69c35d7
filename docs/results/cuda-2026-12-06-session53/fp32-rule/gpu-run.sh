#!/bin/bash
# Fifty-third session, fourth call: the fp32 128x64 tile rule (kFmaMid* in
# src/ops/gemm.cpp). carry [".deb", ".snap"]; .snap/old is the tree of b4fe97f (before
# the rule). Builds bench_gemm_cuda old and new and this tree's GPU tests; runs the
# cuda/gpu tests but the wgmma window sweep, the sanitizers over the fma atom's small
# tensor-map shapes (the 128x64 tiles among them), old and new defaults in alternating
# rounds on shapes the rule was not fitted to, and 128x64 tiles forced on large ones.
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
S=900x900x900,1200x800x700,600x1500x1000,1536x1024x512,800x800x4000,1400x1400x600,2000x1500x300
S=$S,1700x1100x1700,352x3000x640,1024x1024x1024,1900x1700x800,2200x1800x1200,512x512x512,3000x2000x1500
for round in 1 2; do for b in old new; do
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 60 /tmp/bgc-$b --dtypes fp32 --shapes $S >> $OUT/ab.txt 2>&1
done; done
echo "== fp32, cuBLAS time / tessel time (device): round impl: shape ratio ..."
awk '/^== /{r=$0; next} $1=="fp32" {print r, $2, $8}' $OUT/ab.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s %s", $3, $4} END {print ""}'
timeout 90 /tmp/bgc-new --dtypes fp32 --shapes 2048x2048x2048,2300x2100x1000,3000x2000x1500,4096x4096x4096 \
  --plan "" --plan tile=128x64x32,copy=tma,window=3 > $OUT/forced.txt 2>&1
awk '$1=="fp32" {print $2, $8, $NF}' $OUT/forced.txt
for tool in memcheck racecheck synccheck; do
  [ $SECONDS -gt 500 ] && break
  timeout 60 compute-sanitizer --tool $tool build-dev/test_gpu \
    --gtest_filter='CudaGemm.FmaAtomThroughTensorMapsSmallShapes' > $OUT/san-$tool.txt 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-$tool.txt | tr '\n' ' ')"
done

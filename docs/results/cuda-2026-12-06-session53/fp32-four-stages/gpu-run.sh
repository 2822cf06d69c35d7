#!/bin/bash
# Fifty-third session, seventh call: 128x64 tiles for every fp32 product whose 64x64
# tiles pass one wave, four stages from K = 512, no 256x128 default (kFmaMid* in
# src/ops/gemm.cpp). carry [".deb", ".snap"]; .snap/old is the tree of a5a5df4.
# Builds bench_gemm_cuda old and new and this tree's GPU tests; runs the cuda/gpu
# tests but the wgmma window sweep, and old and new defaults in alternating rounds.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
timeout 200 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
(cd build-dev && timeout 150 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.txt 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.txt | grep -v Skipped | tail -12
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,6000x4000x3000,3000x5000x2600,4096x4096x768,2500x2500x2500
S=$S,1000x1000x1000,1500x1500x384,1200x2000x1000
for round in 1 2; do for b in old new; do
  [ $SECONDS -gt 280 ] && break 2
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 40 /tmp/bgc-$b --dtypes fp32 --shapes $S >> $OUT/ab.txt 2>&1
done; done
echo "== fp32, cuBLAS time / tessel time (device): round impl: shape ratio ..."
awk '/^== /{r=$0; next} $1=="fp32" {print r, $2, $8}' $OUT/ab.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s %s", $3, $4} END {print ""}'

#!/bin/bash
# Fifty-third session, third call: fp32 (fma atom) tiles through tensor maps on mid
# shapes with other K, and on larger products of few 128x128 tiles; each plan forced
# beside the default, two rounds. carry [".deb", ".snap"].
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
ln -sfn "$PWD/.deb" .snap/broken/.deb
(OUT=/tmp/broken-out timeout 300 bash .snap/broken/scripts/device_cmake.sh build-broken test_gpu > /tmp/broken-build.log 2>&1;
 echo "broken build rc=$?" >> /tmp/broken-build.log) &
[ -x /tmp/bgc-new ] || bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { cat /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=1000x1000x64,1000x1000x128,900x700x200,2048x256x1024,256x4096x512,640x1600x700,1024x1024x2048
S=$S,1100x1000x600,1500x1200x800,2000x1000x3000,1300x1300x1300,2000x2000x256,1500x1500x384,1200x2000x1000
P=(--plan "" --plan tile=128x64x32,copy=tma,window=3 --plan tile=64x64x32,copy=tma,window=3
   --plan tile=128x128x32,copy=tma,window=3 --plan tile=128x64x32,copy=tma,window=2
   --plan tile=128x64x32,copy=tma,window=4)
for round in 1 2; do
  [ $SECONDS -gt 400 ] && break
  echo "== round $round" >> $OUT/sweep.txt
  timeout 200 /tmp/bgc-new --dtypes fp32 --shapes $S "${P[@]}" >> $OUT/sweep.txt 2>&1
done
wait
tail -3 /tmp/broken-build.log; grep -E -A3 "error" /tmp/broken-out/build.log | head
T=CudaGemm.LaunchesOffSixteenBytesRunTheGeneralVariant
timeout 60 .snap/broken/build-broken/test_gpu --gtest_filter=$T > $OUT/broken-test.txt 2>&1
echo "broken build, $T: rc=$? $(grep -E 'PASSED|FAILED|Failure|error' $OUT/broken-test.txt | head -4 | tr '\n' ' ')"
awk '$1=="fp32"{p=$NF; if (p ~ /^[0-9.e-]+$/) p="default"; print $2, p, $8}' $OUT/sweep.txt | sort |
  awk '{k=$1" "$2; v[k]=v[k]" "$3} END {for (x in v) print x, v[x]}' | sort

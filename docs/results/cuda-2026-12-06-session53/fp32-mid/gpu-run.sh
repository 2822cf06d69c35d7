#!/bin/bash
# Fifty-third session, second call: fp32 (fma atom) plans for mid shapes (M x N up to
# 1024^2 take 64x64x16 tiles, cp.async, two stages), each forced beside the default,
# two rounds; and the new GPU test on .snap/broken (this tree with execute's address
# check removed), which must fail. carry [".deb", ".snap"].
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
ln -sfn "$PWD/.deb" .snap/broken/.deb
(OUT=/tmp/broken-out timeout 300 bash .snap/broken/scripts/device_cmake.sh build-broken test_gpu > /tmp/broken-build.log 2>&1;
 echo "broken build rc=$?" >> /tmp/broken-build.log) &
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { cat /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=1000x1000x1000,512x512x512,768x768x768,1024x512x1024,700x900x500,1000x1000x300,400x2000x800,600x600x2000,1100x1000x600
P=(--plan "" --plan tile=64x64x32 --plan tile=64x64x16,window=3 --plan tile=128x64x16
   --plan tile=128x128x32,copy=tma,window=3 --plan tile=64x64x32,copy=tma,window=3
   --plan tile=128x64x32,copy=tma,window=3 --plan tile=128x64x32,window=3)
for round in 1 2; do
  [ $SECONDS -gt 420 ] && break
  echo "== round $round" >> $OUT/sweep.txt
  timeout 150 /tmp/bgc-new --dtypes fp32 --shapes $S "${P[@]}" >> $OUT/sweep.txt 2>&1
done
wait
tail -3 /tmp/broken-build.log
T=CudaGemm.LaunchesOffSixteenBytesRunTheGeneralVariant
timeout 60 .snap/broken/build-broken/test_gpu --gtest_filter=$T > $OUT/broken-test.txt 2>&1
echo "broken build, $T: rc=$? $(grep -E 'PASSED|FAILED|Failure|error' $OUT/broken-test.txt | head -4 | tr '\n' ' ')"
echo "== fp32: shape plan -> cuBLAS / tessel device time, per round"
awk '/^== /{next} $1=="fp32" {print}' $OUT/sweep.txt | head -3

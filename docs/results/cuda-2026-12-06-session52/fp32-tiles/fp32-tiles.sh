#!/bin/bash
# Fifty-second session, third call: with the 128x128 fp32 kernel 3-4% faster (no
# spill), the shapes whose default is 256x128 tiles (kFmaWideMinWaveFill) beside the
# same shapes on 128x128 tiles with 3 stages, the 128x128 default's plan. Three rounds,
# beta 0, this tree (52ca30e). One `run` call, no carry.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { tail /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=4096x4096x4096,2048x2048x2048,1500x2500x700,2500x3000x900,4000x6000x1024,5000x3000x2500,7000x3000x2000,3000x4000x800,2000x6000x1500,8192x8192x8192
for round in 1 2 3; do
  [ $SECONDS -gt 480 ] && break
  echo "== round $round" >> $OUT/tiles.txt
  timeout 120 /tmp/bgc-new --dtypes fp32 --shapes $S --plan "" --plan tile=128x128x32,window=3 >> $OUT/tiles.txt 2>&1
done
echo "shape: default (256x128) dev x, then 128x128 dev x, per round"
awk '$1=="fp32" {print $2, $8}' $OUT/tiles.txt | awk '{a[$1]=a[$1]" "$2} END {for (s in a) print s":"a[s]}' | sort

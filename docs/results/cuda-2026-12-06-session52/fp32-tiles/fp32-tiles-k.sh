#!/bin/bash
# Fifty-second session, fourth call: the third call found 128x128 tiles faster than
# the default 256x128 at K 700-900 and slower from K 2048. Here more shapes, K 512 to
# 1536 (each of whose last wave the 256x128 tiles fill to 85% or more, so the default
# takes them), both tiles forced, three rounds, beta 0, this tree (52ca30e). One `run`
# call, no carry.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
[ -x /tmp/bgc-new ] || bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { tail /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=4096x4096x512,3000x5000x600,6000x2000x960,2048x8192x1000,8192x4096x768,4096x4096x1280,3000x3000x1200,5000x5000x1536,4096x4096x1024,2500x7000x640
for round in 1 2 3; do
  [ $SECONDS -gt 480 ] && break
  echo "== round $round" >> $OUT/tiles-k.txt
  timeout 150 /tmp/bgc-new --dtypes fp32 --shapes $S --plan tile=256x128x32,window=2 --plan tile=128x128x32,window=3 >> $OUT/tiles-k.txt 2>&1
done
echo "shape: 256x128 dev x, then 128x128 dev x, per round"
awk '$1=="fp32" {print $2, $8}' $OUT/tiles-k.txt | awk '{a[$1]=a[$1]" "$2} END {for (s in a) print s":"a[s]}' | sort

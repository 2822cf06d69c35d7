#!/bin/bash
# Fifty-third session, sixth call: where the default fp32 plan is 256x128 tiles, those
# beside 128x64 and 256x64 tiles through tensor maps, two rounds. carry [".deb"].
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { cat /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,6000x4000x3000,5000x3000x2500,7000x5000x2500,4096x4096x512
P=(--plan "" --plan tile=128x64x32,copy=tma,window=3 --plan tile=128x64x32,copy=tma,window=4
   --plan tile=256x64x32,copy=tma,window=3)
for round in 1 2; do
  [ $SECONDS -gt 400 ] && break
  echo "== round $round" >> $OUT/sweep.txt
  timeout 200 /tmp/bgc-new --dtypes fp32 --shapes $S "${P[@]}" >> $OUT/sweep.txt 2>&1
done
awk '$1=="fp32"{p=$NF; if (p ~ /^[0-9.e-]+$/) p="default"; print $2, p, $8}' $OUT/sweep.txt | sort |
  awk '{k=$1" "$2; v[k]=v[k]" "$3} END {for (x in v) print x, v[x]}' | sort

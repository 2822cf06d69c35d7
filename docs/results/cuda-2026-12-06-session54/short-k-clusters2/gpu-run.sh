#!/bin/bash
# Fifty-fourth session, third call. No carry. Fresh 16-bit shapes with K from 1544 to
# 2048 (and 2048^3, 1800^3) whose default tile rows, paired, add no wave: default plan
# and clusters of two, two rounds.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { cat /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=2048x2048x2048,1800x1800x1800,2048x2048x1600,3960x1064x2016,4096x2216x1720,5464x3856x1864,4824x1768x1600
S=$S,5768x2504x1808,3280x4304x1768,3992x2104x1856,1920x4728x1696,3240x4840x1752,2824x4008x1552,5920x3032x1856
S=$S,1160x2168x1888,1448x5544x1888,3064x5624x1888,2288x5248x1960
for round in 1 2; do
  [ $SECONDS -gt 400 ] && break
  echo "== round $round" >> $OUT/clusters.txt
  timeout 150 /tmp/bgc-new --dtypes bf16,fp16 --shapes $S --plan "" --plan cluster=2 >> $OUT/clusters.txt 2>&1
done
echo "== dtype shape plan: cuBLAS time / tessel time (device) per round"
awk '$1=="bf16"||$1=="fp16"{p=$NF; if (p ~ /^[0-9.e-]+$/) p="default"; print $1, $2, p, $8}' $OUT/clusters.txt |
  sort | awk '{k=$1" "$2" "$3; v[k]=v[k]" "$4} END {for (x in v) print x, v[x]}' | sort

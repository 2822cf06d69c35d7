#!/bin/bash
# Fifty-fourth session, first call: fp32 128x64x32 tiles through tensor maps with 128
# threads of 8x8 outputs (A read 4 k at a time in the new tree, 2 in the old one)
# beside the default's 256 threads of 8x4, two alternating rounds. carry [".snap"];
# .snap/old = git archive of the tree before (c5695f2).
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh .snap/old old > /tmp/bold.log 2>&1 || cat /tmp/bold.log) &
bash scripts/device_bench_gemm.sh . new > /tmp/bnew.log 2>&1 || { cat /tmp/bnew.log; exit 1; }
wait
echo "built at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,6000x4000x3000,3000x2000x1500,1000x1000x1000,2200x1800x1200,3500x2500x1800
P=(--plan "" --plan tile=128x64x32,copy=tma,window=4,grid=16x8 --plan tile=128x64x32,copy=tma,window=3,grid=16x8)
for round in 1 2; do
  [ $SECONDS -gt 420 ] && break
  for t in old new; do
    echo "== round $round $t" >> $OUT/sweep.txt
    timeout 150 /tmp/bgc-$t --dtypes fp32 --shapes $S "${P[@]}" >> $OUT/sweep.txt 2>&1
  done
done
awk '/^== round/{t=$4} $1=="fp32"{p=$NF; if (p ~ /^[0-9.e-]+$/) p="default"; print $2, t, p, $8}' $OUT/sweep.txt |
  sort | awk '{k=$1" "$2" "$3; v[k]=v[k]" "$4} END {for (x in v) print x, v[x]}' | sort

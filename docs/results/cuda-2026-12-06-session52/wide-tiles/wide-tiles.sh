#!/bin/bash
# Fifty-second session, second call: the 256x128 fp32 tiles (255 registers, no spill
# either way) with the fma atom's shared reads as generic loads (.snap/old, abca090)
# and through 32-bit window addresses (this tree), 4 alternating rounds, beta 0. The
# first call measured 4096^3 +0.7%, 2048^3 -0.9% and 1500x2500x700 -2.8% for the new
# form there. One `run` call, carry [".snap"].
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,1500x2500x700,6000x4000x3000,7000x3000x2000,4000x6000x1024,5000x3000x2500,2500x3000x900
for round in 1 2 3 4; do for b in old new; do
  [ $SECONDS -gt 500 ] && break 2
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 60 /tmp/bgc-$b --dtypes fp32 --shapes $S >> $OUT/ab.txt 2>&1
done; done
echo "== fp32, cuBLAS time / tessel time (device): round impl: shape ratio ..."
awk '/^== /{r=$0; next} $1=="fp32" {print r, $2, $8}' $OUT/ab.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s %s", $3, $4} END {print ""}'

#!/bin/bash
# Forty-ninth session, second call: the fp32 (fma atom, tensor maps) default beside
# persistent grids (three bands) and a third stage, on squares and mid shapes; device
# time, cuBLAS sgemm in the same process. One `run` call, no carry.
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 || { tail -20 $OUT/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,6000x4000x3000,2048x2048x2048,3000x2000x1500,7000x3000x2000
for round in 1 2; do
  timeout 200 /tmp/bgc-new --dtypes fp32 --shapes $S --plan "" --plan persistent=132 --plan persistent=132,band=4 \
    --plan persistent=132,band=16 --plan window=3 > $OUT/fp32-plans-$round.txt 2>&1
  echo "round $round rc=$? at $SECONDS s"
done
for round in 1 2; do echo "== round $round"; tail -n +3 $OUT/fp32-plans-$round.txt | awk '{print $1, $2, $8, $11}'; done

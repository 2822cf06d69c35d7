#!/bin/bash
# Which kernels cuBLAS runs (name, grid, block, cluster) on bf16 shapes where tessel's
# default stays under 0.75x, and two where it does not: ncu LaunchStats, first
# non-tessel kernels of each bench run.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
for S in 1024x5000x3000 1104x5368x4440 1432x2576x2616 4064x1512x2056 5112x1800x4496 1184x3304x2504 3352x5768x4296 1576x1952x1464 4096x4096x4096 2048x2048x2048 1280x1280x1280; do
  echo "=== $S"
  timeout 60 ncu --clock-control none --section LaunchStats -k 'regex:^(?!tessel)' --launch-count 2 /tmp/bgc-cur --dtypes bf16 --shapes $S 2>&1 | grep -E "^  [a-z_0-9]+.*\(|Block Size|Grid Size|Cluster Size|Registers Per|Shared Memory Config|Dynamic Shared|^bf16"
done > $OUT/ncu.txt 2>&1
grep -E "===|^  [a-z]|Grid Size|Cluster Size|Block Size" $OUT/ncu.txt | cut -c1-200
echo "done at $SECONDS s"

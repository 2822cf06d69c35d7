#!/bin/bash
# Where tessel's bf16 kernel loses to cuBLAS's on mid shapes: Nsight Compute's speed of
# light, memory and warp-state sections on both kernels, at 1184x3304x2504 (cuBLAS runs
# our 128x256 tile there and is 1.5x faster), 1024x5000x3000, and 4096^3 (0.91) for contrast.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
/tmp/bgc-cur --dtypes bf16 --shapes 1184x3304x2504,1024x5000x3000,4096x4096x4096 > $OUT/bench.txt 2>&1
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
for S in 1184x3304x2504 1024x5000x3000 4096x4096x4096; do
  for K in 'regex:^tessel' 'regex:^(?!tessel)'; do
    echo "=== $S $K"
    timeout 120 ncu --clock-control none $SECTIONS -k "$K" --launch-skip 2 --launch-count 1 /tmp/bgc-cur --dtypes bf16 --shapes $S 2>&1 | grep -v "^==PROF==\|^bf16\|^dtype"
  done
done > $OUT/ncu.txt 2>&1
grep -E "^===|^  [a-zA-Z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|L2 Hit Rate|Issue Slots Busy|No Eligible|Eligible Warps|Warp Cycles Per Issued|Cluster Size|Registers Per" $OUT/ncu.txt | cut -c1-150
cat $OUT/bench.txt | tail -6
echo "done at $SECONDS s"

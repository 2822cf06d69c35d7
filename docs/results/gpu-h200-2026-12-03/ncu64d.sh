#!/bin/bash
# Why the 128x64 bf16 wgmma kernel is slow: ncu warp-state and pipe detail of tessel's
# 128x64 plan, its default plan, and cuBLAS's kernel, at 1024x1024x8192.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192
SECT="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section InstructionStats"
timeout 200 ncu --clock-control none $SECT -k regex:tessel_kernel --launch-skip 4 -c 1 \
  /tmp/bgc --dtypes bf16 --shapes $S --quick --plan tile=128x64x64,workers=2 > $OUT/ncu-t64.txt 2>&1
echo "t64 at $SECONDS s"
timeout 200 ncu --clock-control none $SECT -k regex:nvjet --launch-skip 4 -c 1 \
  /tmp/bgc --dtypes bf16 --shapes $S --quick > $OUT/ncu-cublas.txt 2>&1
echo "cublas at $SECONDS s"
timeout 120 ncu --clock-control none --set full --import-source no -k regex:tessel_kernel --launch-skip 4 -c 1 \
  --page source --print-source sass /tmp/bgc --dtypes bf16 --shapes $S --quick --plan tile=128x64x64,workers=2 > $OUT/ncu-t64-sass.txt 2>&1
echo "sass at $SECONDS s"
for f in $OUT/ncu-t64.txt $OUT/ncu-cublas.txt; do
  echo "== $f"; grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc A|Block Size|Grid Size|Dynamic Shared" $f | head -30
done
wc -l $OUT/*.txt

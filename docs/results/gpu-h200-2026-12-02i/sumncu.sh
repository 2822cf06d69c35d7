#!/bin/bash
# ncu sections of split-K's sum kernel (and the main kernel) at bf16 1024x1024x8192.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
timeout 300 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy -k regex:tessel -c 2 \
  /tmp/bgc --dtypes bf16 --shapes 1024x1024x8192 --quick > $OUT/sum-ncu.txt 2>&1
grep -v "^==PROF==" $OUT/sum-ncu.txt | grep -E "tessel_kernel|Duration|Throughput|Memory \[%\]|DRAM|L2 Cache|L1/TEX Hit|Achieved Occupancy|Registers|Waves|Grid Size|Block Size|Mem Busy|Max Bandwidth" | head -60
echo "done at $SECONDS s"

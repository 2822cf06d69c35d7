#!/bin/bash
# L2 traffic of tessel's 128x64 bf16 kernel (4 and 8 stages), its default plan and
# cuBLAS's 128x64 cluster-of-2 kernel at 1024x1024x8192.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192
M=gpu__time_duration.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg,lts__throughput.avg.pct_of_peak_sustained_elapsed,launch__cluster_dim_x,launch__cluster_dim_y,launch__grid_size
run() { timeout 120 ncu --clock-control none --metrics $M -k regex:"$1" --launch-skip 4 -c 1 /tmp/bgc --dtypes bf16 --shapes $S --quick $2 > $OUT/$3.txt 2>&1; echo "== $3"; grep -E "^\s+(gpu__|lts__|dram__|sm__|smsp__|launch__)" $OUT/$3.txt; }
run tessel_kernel "--plan tile=128x64x64,workers=2" t64-w4
run tessel_kernel "--plan tile=128x64x64,workers=2,window=8" t64-w8
run tessel_kernel "" default
run nvjet "" cublas
echo "done at $SECONDS s"

#!/bin/bash
# Is 3000^3 slow for its ragged edge tiles? Default plans near 3000^3.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
/tmp/bgc --dtypes bf16 --shapes 3072x3072x3072,3000x3000x3000,3072x3072x3000,3000x3072x3072,3072x3000x3072,3008x3008x3008,2944x3072x3072 > $OUT/edge.txt 2>&1
awk '{print $1,$2,$5,$6,$8,$9}' $OUT/edge.txt | column -t
echo "done at $SECONDS s"

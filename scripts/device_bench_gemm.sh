#!/bin/bash
# On the GPU machine (the `run` tool): builds bench/bench_gemm_cuda (tessel beside
# cuBLAS, bench/bench_gemm_cuda.cpp) from the tree TREE into /tmp/bgc-NAME, with plain
# g++ on every core. Measurement scripts build two trees at once and alternate them:
#   scripts/device_bench_gemm.sh .snap/old old & scripts/device_bench_gemm.sh .snap/cur new & wait
#   /tmp/bgc-old --dtypes bf16 --shapes 1024x1024x8192; /tmp/bgc-new --dtypes bf16 --shapes 1024x1024x8192
set -e
[ $# = 2 ] || { echo "usage: $0 TREE NAME" >&2; exit 2; }
TREE=$(readlink -f "$1")
O=/tmp/bgc-obj-$2
mkdir -p "$O"
cd "$TREE"
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$TREE\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src -name "*.cpp" | xargs -P "$(nproc)" -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o"
$CXX bench/bench_gemm_cuda.cpp "$O"/src_*.o -L/usr/local/cuda/lib64 -lnvrtc -lcublas -lcudart -ldl -lpthread \
  -o "/tmp/bgc-$2"
echo "built /tmp/bgc-$2 from $TREE"

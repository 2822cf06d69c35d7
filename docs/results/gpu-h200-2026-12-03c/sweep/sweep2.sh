#!/bin/bash
# Issue 14's bars on shapes no issue lists: one call, device time and host wall beside cuBLAS.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
set -o pipefail
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
g++ -o /tmp/tessel $O/tools_*.o $O/src_*.o $L || exit 1
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
export PATH=/usr/local/cuda/bin:$PATH
# cold compiles (empty cache), by part
export TESSEL_CACHE_DIR=/tmp/kc-cold
for d in bf16 fp16 tf32 fp32; do rm -rf $TESSEL_CACHE_DIR; echo "$d 4096^3: $(TESSEL_PASS_TIMING=1 /tmp/tessel explain 4096 4096 4096 --target cuda --dtype $d 2>&1 | grep 'tessel: nvrtc')"; done | tee $OUT/cold.txt
rm -rf $TESSEL_CACHE_DIR; echo "bf16 2049x1023x257: $(TESSEL_PASS_TIMING=1 /tmp/tessel explain 2049 1023 257 --target cuda --dtype bf16 2>&1 | grep 'tessel: nvrtc')" | tee -a $OUT/cold.txt
unset TESSEL_CACHE_DIR
/tmp/bgc --dtypes bf16,fp16 --shapes 1024x2048x3072,1536x1024x8192,2048x2048x5000,1100x1300x7000,3000x3000x3000,1024x1024x6000,1024x4096x2048,1280x1024x12288,1024x1024x8192,4096x4096x4096,8192x8192x8192 > $OUT/big16.txt 2>&1; echo "big16 at $SECONDS s"
/tmp/bgc --dtypes bf16,fp16 --shapes 16x8192x8192,64x2048x12000,256x256x20000,100x1000x9000,1024x512x16384 > $OUT/longk.txt 2>&1; echo "longk at $SECONDS s"
/tmp/bgc --dtypes tf32,fp32 --shapes 4096x4096x4096,2500x3500x1500 > $OUT/tf32-fp32.txt 2>&1; echo "tf32/fp32 at $SECONDS s"
/tmp/bgc --dtypes fp32,tf32,bf16,fp16 --shapes 64x64x64,100x150x200,256x256x256,17x230x99,128x64x250,240x240x16,180x40x256 > $OUT/small.txt 2>&1; echo "small at $SECONDS s"
for f in big16 longk tf32-fp32 small; do echo "== $f"; tail -n +2 $OUT/$f.txt | awk '{print $1, $2, "host", $7, "dev", $8, $NF}'; done
echo "done at $SECONDS s"

#!/bin/bash
# bf16 split-K shapes: the sum kernel's row tile BM (TESSEL_EXP_SUM_BM, a temporary override).
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192,1024x1536x6144,1280x1024x12288,512x512x8192,1024x1024x4096
for rep in 1 2; do
for bm in 2 4 8 16; do
  TESSEL_EXP_SUM_BM=$bm /tmp/bgc --dtypes bf16 --shapes $S > $OUT/bm$bm-$rep.txt 2>&1
  echo "BM=$bm rep $rep: $(grep '^bf16' $OUT/bm$bm-$rep.txt | awk '{printf "%s %s %s | ", $2, $8, $10}')"
done; done
TESSEL_EXP_SUM_BM=8 timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum -c 12 /tmp/bgc --dtypes bf16 --shapes 1024x1024x8192 --quick 2>&1 | grep -E "tessel_kernel \(|gpu__time" | paste - - | awk '{print $2, $3, $NF}' | head -12
echo "done at $SECONDS s"

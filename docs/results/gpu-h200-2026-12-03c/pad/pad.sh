#!/bin/bash
# Operands whose rows are not a multiple of 128 bytes copied to padded rows first
# (TESSEL_TMA_PAD=128, a temporary switch) against the default (16), alternating.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
S=${SHAPES:-3000x3000x3000,3072x3072x3000,3000x8192x3000,8192x3000x3000,4000x4000x4000,1024x1024x6000,5000x5000x2000,2048x2048x5000}
for r in 1 2; do
  /tmp/bgc --dtypes bf16 --shapes $S > $OUT/pad16-$r.txt 2>&1
  TESSEL_TMA_PAD=128 /tmp/bgc --dtypes bf16 --shapes $S > $OUT/pad128-$r.txt 2>&1
  echo "round $r at $SECONDS s"
done
paste <(awk '{print $2, $5, $8}' $OUT/pad16-1.txt) <(awk '{print $5, $8}' $OUT/pad128-1.txt) <(awk '{print $5, $8}' $OUT/pad16-2.txt) <(awk '{print $5, $8}' $OUT/pad128-2.txt)
echo "done at $SECONDS s"
T=${TSHAPES:-3000x3000x3000,2500x3500x1500,4096x4096x4000}
for r in 1 2; do
  /tmp/bgc --dtypes tf32 --shapes $T > $OUT/tt4-$r.txt 2>&1
  TESSEL_TT_PAD=32 /tmp/bgc --dtypes tf32 --shapes $T > $OUT/tt32-$r.txt 2>&1
done
paste <(awk '{print $2, $5, $8}' $OUT/tt4-1.txt) <(awk '{print $5, $8}' $OUT/tt32-1.txt) <(awk '{print $5, $8}' $OUT/tt4-2.txt) <(awk '{print $5, $8}' $OUT/tt32-2.txt)
echo "tf32 done at $SECONDS s"

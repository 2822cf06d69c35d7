#!/bin/bash
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
set -o pipefail
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
S=200x200x200,180x200x220,33x250x180,65x129x127,256x256x256,128x128x128,100x100x100,250x130x250,64x64x64,256x100x256
for run in 1 2; do
/tmp/bgc --dtypes fp32 --shapes $S --plan "" --plan tile=32x32x8 --plan tile=32x32x16 --plan tile=32x32x64 \
  --plan tile=16x32x32,grid=4x8 --plan tile=32x32x32,window=3 --plan tile=16x16x32,grid=4x4 > $OUT/small32-$run.txt 2>&1
echo "run $run at $SECONDS s"
done
grep -v "^device" $OUT/small32-1.txt | awk '{print $2, $3, $4, $7, ($NF ~ /=/ ? $NF : "default")}' | head -80
echo "== run 2"
grep -v "^device" $OUT/small32-2.txt | awk '{print $2, $3, $4, $7, ($NF ~ /=/ ? $NF : "default")}' | head -80

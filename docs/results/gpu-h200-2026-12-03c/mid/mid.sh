#!/bin/bash
# bf16 plan variants beside cuBLAS on the 2500-5000 class (3000^3 ran 0.70 with the default).
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
S=${SHAPES:-3000x3000x3000,2500x2500x2500,3500x3500x3500,2800x3300x2000,3000x2000x4000,5000x5000x2000}
W="atom=wgmma,window=4,copy=tma,producers=1"
/tmp/bgc --dtypes bf16 --shapes $S --plan "" --plan "tile=128x256x64,workers=2,$W" \
  --plan "tile=128x256x64,workers=2,$W,persistent=132,band=8" --plan "tile=128x192x64,workers=2,$W,persistent=132,band=8" \
  --plan "tile=128x128x64,workers=2,$W" --plan "tile=256x128x64,workers=4,$W" > $OUT/mid.txt 2>&1
cat $OUT/mid.txt | awk '{print $1, $2, "dev", $8, $NF}'
echo "done at $SECONDS s"

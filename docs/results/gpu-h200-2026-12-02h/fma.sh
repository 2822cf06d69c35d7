#!/bin/bash
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
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,3000x2000x1500,5000x3000x2500
# warm the kernel cache for each order (compiles in parallel)
for o in 0 1 2; do TESSEL_EXP_FMA_ORDER=$o /tmp/tessel gemm 1000 999 777 --target cuda --dtype fp32 --tile 256x128x32 --check > $OUT/check-$o.txt 2>&1 & done; wait
for run in 1 2; do for o in 0 1 2; do TESSEL_EXP_FMA_ORDER=$o /tmp/bgc --dtypes fp32 --shapes $S > $OUT/order$o-$run.txt 2>&1; echo "order $o run $run at $SECONDS s"; done; done
tail -n 2 $OUT/check-*.txt
for o in 0 1 2; do for r in 1 2; do echo "== order $o run $r"; tail -n +2 $OUT/order$o-$r.txt; done; done
head -3 $OUT/order0-1.txt
echo "done at $SECONDS s"

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
S=1024x1024x8192,1024x1024x4096,2048x1024x8192,1024x1536x6144,1280x1024x12288,1024x1024x2048
run() { name=$1; split=$2; plan=$3
  if [ -n "$plan" ]; then TESSEL_EXP_SPLIT=$split /tmp/bgc --dtypes bf16 --shapes $S --plan "$plan" > $OUT/$name.txt 2>&1
  else TESSEL_EXP_SPLIT=$split /tmp/bgc --dtypes bf16 --shapes $S > $OUT/$name.txt 2>&1; fi
  echo "== $name: $(grep '^bf16' $OUT/$name.txt | awk '{printf "%s %s | ", $2, $8}')"; }
run default 0 ""
run s1 1 ""
for sp in 2 3 4; do run t128x128-s$sp $sp tile=128x128x64; done
for sp in 1 2 4; do run t128x256-s$sp $sp tile=128x256x64; done
for sp in 2 3; do run t128x192-s$sp $sp tile=128x192x64; done
for sp in 1 2; do run t64x128-s$sp $sp tile=64x128x64; done
echo "done at $SECONDS s"

#!/bin/bash
# Programmatic dependent launch: old (HEAD), new (wait + early trigger) and late (wait,
# implicit trigger at exit), alternating, bench_gemm_cuda device and host time.
HERE=$(dirname "$(readlink -f "$0")")
mkdir -p $OUT/ab
build() {  # $1 tree, $2 output
  (cd $HERE/$1 && O=/tmp/o-$1 && mkdir -p $O &&
   CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include" &&
   find src tools -name "*.cpp" | xargs -P 6 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" &&
   $CXX bench/bench_gemm_cuda.cpp $O/src_*.o -L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread -lcublas -lcudart -o $2)
}
build old /tmp/bgc-old & build cur /tmp/bgc-new & build late /tmp/bgc-late & wait
ls /tmp/bgc-old /tmp/bgc-new /tmp/bgc-late || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192,512x512x8192,16x4096x4096,1024x1024x4096,64x64x64,256x256x256
for r in 1 2; do
  for v in old new late; do
    TESSEL_CACHE_DIR=/tmp/kc-$v timeout 40 /tmp/bgc-$v --dtypes bf16,tf32 --shapes $S > $OUT/ab/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
for s in ${S//,/ }; do for d in bf16 tf32; do printf "%s %-15s" $d $s; for r in 1 2; do for v in old new late; do
  awk -v d=$d -v s=$s -v v=$v '$1==d && $2==s{printf " %s:%s/%s", v, $3, $5}' $OUT/ab/$v-$r.txt; done; done; echo; done; done
echo "done at $SECONDS s"

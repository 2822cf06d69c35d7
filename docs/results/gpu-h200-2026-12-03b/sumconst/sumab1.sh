#!/bin/bash
# Split-K's sum with the slice count a constant (new, the working tree) against a size
# (old, HEAD), alternating; then 5 stages for the new default plans; then ncu's warp
# states for both sums at 1024x1024x8192.
HERE=$(dirname "$(readlink -f "$0")")
build() {  # $1 tree, $2 output
  (cd $HERE/$1 && O=/tmp/o-$1 && mkdir -p $O &&
   CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include" &&
   find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" &&
   $CXX bench/bench_gemm_cuda.cpp $O/src_*.o -L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread -lcublas -lcudart -o $2)
}
build old /tmp/bgc-old & build cur /tmp/bgc-new & wait
ls /tmp/bgc-old /tmp/bgc-new || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192,512x512x8192,16x4096x4096,1024x1024x4096,2048x1024x8192,256x512x16384
for r in 1; do
  for v in old new; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16,fp32 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
  TESSEL_CACHE_DIR=/tmp/kc-new /tmp/bgc-new --dtypes bf16 --shapes $S --plan window=5 > $OUT/w5-$r.txt 2>&1
  echo "round $r at $SECONDS s"
done
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-[12].txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append(float(p[7]))
print('%-24s %-14s %-14s %-14s   (device time, cuBLAS / tessel)' % ('dtype shape', 'old', 'new', 'new window=5'))
for k, vv in d.items(): print('%-24s %-14s %-14s %-14s' % (k, *(' '.join('%.3f' % x for x in vv.get(v, [])) for v in ('old', 'new', 'w5'))))
PY
grep -ih "error" $OUT/*.txt | sort | uniq -c | head -5
echo "done at $SECONDS s"

#!/bin/bash
# A/B of the wgmma descriptor arithmetic: old (HEAD) against new (working tree), alternating runs.
HERE=$(dirname "$(readlink -f "$0")")
build() {  # $1 tree, $2 output
  (cd $HERE/$1 && O=/tmp/o-$1 && mkdir -p $O &&
   CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include" &&
   find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" &&
   $CXX bench/bench_gemm_cuda.cpp $O/src_*.o -L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread -lcublas -lcudart -o $2)
}
build old /tmp/bgc-old & build cur /tmp/bgc-new & wait
ls -la /tmp/bgc-old /tmp/bgc-new || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192,1024x1024x4096,1024x1536x6144,2048x1024x8192,2048x2048x2048,4096x4096x4096,8192x8192x8192,3000x2500x2000
for r in 1 2; do
  for v in old new; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16 --shapes $S > $OUT/$v-$r.txt 2>&1
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16 --shapes 1024x1024x8192,1024x1024x4096 --plan tile=128x64x64,workers=2,window=8 > $OUT/$v-t64-$r.txt 2>&1
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes tf32,fp16 --shapes 4096x4096x4096,1024x1024x8192 > $OUT/$v-tf-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    name = f.split('/')[-1][:-4]; v = name.split('-')[0]; r = name.split('-')[-1]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'tf32', 'fp16'):
            key = p[0] + ' ' + p[1] + (' t64w8' if 't64' in name else '')
            d[key].setdefault(v, []).append(float(p[7]))
print('%-30s %-20s %-20s' % ('dtype shape', 'old dev x', 'new dev x'))
for k, vv in d.items(): print('%-30s %-20s %-20s' % (k, ' '.join('%.3f' % x for x in vv.get('old', [])), ' '.join('%.3f' % x for x in vv.get('new', []))))
PY
echo "done at $SECONDS s"

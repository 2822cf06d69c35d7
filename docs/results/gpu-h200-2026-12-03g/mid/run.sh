#!/bin/bash
# Small-block split-K (cur) against HEAD (old) on mid shapes (64x64 blocks: mma.sync
# for 16-bit under 2^27 multiply-adds, fp32's 64x64 fma tiles): bench_gemm_cuda of
# both trees, alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
for v in old cur; do (scripts/device_bench_gemm.sh $HERE/../$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur || { tail -5 /tmp/b-*.log /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
B=520x264x770,300x600x700,700x180x1000,250x500x1000,600x600x300,256x256x1024,128x128x1024,100x300x2000
F=520x264x770,400x400x800,300x600x700,700x180x1000,600x600x300,256x256x1024
mkdir -p /tmp/r
for r in 1 2; do
  for v in old cur; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16,fp16 --shapes $B > /tmp/r/$v-b$r.txt 2>&1
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes fp32 --shapes $F > /tmp/r/$v-f$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    if v not in ('old', 'cur'): continue
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s,%s,h%s)' % (p[7], p[4].replace('us',''), p[9], p[6]))
print('%-22s %-48s %-48s (cuBLAS/tessel dev, tessel dev us, diff, host ratio)' % ('dtype shape', 'old', 'cur'))
for k, vv in d.items(): print('%-22s %-48s %-48s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur'))))
PY
echo "done at $SECONDS s"

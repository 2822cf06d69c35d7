#!/bin/bash
# The small-shape bar (host wall per call no higher than cuBLAS up to 256^3): every
# dtype on 12 shapes with every dimension <= 256, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur  # the tree at ea49d9e (.snap/cur; fbd22db changed docs only)
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
S=32x32x32,64x64x64,100x100x100,128x128x128,127x193x61,200x300x100,250x130x250,256x256x256,17x255x99,150x90x250,256x136x256,200x200x200
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
for r in 1 2; do /tmp/bgc-cur --dtypes fp32,tf32,bf16,fp16 --shapes $S > /tmp/r/s$r.txt 2>&1; echo "round $r at $SECONDS s"; done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[(p[1], p[0])].append(float(p[6]))
shapes = sorted({k[0] for k in d}, key=lambda s: [int(x) for x in s.split('x')])
met = 0
print('host-wall cuBLAS / tessel (>= 1: tessel no slower), two rounds')
print('%-14s %-14s %-14s %-14s %-14s' % ('shape', 'fp32', 'tf32', 'bf16', 'fp16'))
for s in shapes:
    row = []
    for t in ('fp32', 'tf32', 'bf16', 'fp16'):
        v = d.get((s, t), [])
        met += bool(v) and min(v) >= 1.0
        row.append(','.join('%.2f' % x for x in v))
    print('%-14s %-14s %-14s %-14s %-14s' % (s, *row))
print('pairs at >= 1.0 in both rounds: %d of %d' % (met, len(d)))
PY
echo "done at $SECONDS s"

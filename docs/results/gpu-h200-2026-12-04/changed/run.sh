#!/bin/bash
# Three-warpgroup tiles (cur) against HEAD ba62899 (old) on shapes whose default tile
# the change moved (drawn from a random grid of dimensions 1024-6144), two rounds
# alternating; on cur, the three that now split K beside the same tile unsplit, and
# 1024x5000x3000 under each tile.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur  # the tree with three-warpgroup tiles (.snap/cur); old: HEAD ba62899 (.snap/old)
for v in old cur; do (scripts/device_bench_gemm.sh $HERE/../$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
S=1536x1536x6144,1536x1024x6144,1536x1536x8192,2048x2304x1024,2560x5120x2048,3072x1024x1024,3584x1152x3072,4096x2304x2048,5120x1664x1536,5120x5120x1024,6144x1024x3072,1536x3072x2560,2560x1664x2560,4096x1152x2560,6144x3072x1280
mkdir -p /tmp/r
for r in 1 2; do
  for v in old cur; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16 --shapes $S > /tmp/r/$v-b$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
TESSEL_CACHE_DIR=/tmp/kc-cur /tmp/bgc-cur --dtypes bf16 --shapes 1536x1536x6144,1536x1024x6144,1536x1536x8192 \
  --plan split=1 --plan split=2 --plan tile=128x192x64,workers=2,split=1 > /tmp/r/var1.txt 2>&1
TESSEL_CACHE_DIR=/tmp/kc-cur /tmp/bgc-cur --dtypes bf16 --shapes 1024x5000x3000,1800x1800x4096 \
  --plan tile=192x192x64,workers=3 --plan tile=192x128x64,workers=3 --plan tile=128x256x64,workers=2 \
  --plan tile=128x192x64,workers=2 --plan tile=128x128x64,workers=2 --plan tile=64x128x64,workers=1 > /tmp/r/var2.txt 2>&1
echo "bench at $SECONDS s"
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s)' % (p[7], p[4].replace('us','')))
print('%-22s %-30s %-30s (cuBLAS/tessel dev, tessel dev us)' % ('dtype shape', 'old', 'cur'))
for k, vv in d.items(): print('%-22s %-30s %-30s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur'))))
for f in ('var1', 'var2'):
    for l in open(sys.argv[1] + '/' + f + '.txt'):
        p = l.split()
        if len(p) >= 10 and p[0] == 'bf16': print('%-22s %s(%s) %s' % (p[1], p[7], p[4], p[10] if len(p) > 10 else 'default'))
PY
echo "done at $SECONDS s"

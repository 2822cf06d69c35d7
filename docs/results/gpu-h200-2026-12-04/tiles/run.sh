#!/bin/bash
# 16-bit wgmma tiles of three consumer warpgroups (192x192, 192x128) against the
# default plans, on shapes with every dimension >= 1024: cuBLAS / tessel device time.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur  # the tree at ba62899 (.snap/cur)
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
P="--plan tile=192x192x64,workers=3 --plan tile=192x128x64,workers=3 --plan tile=128x192x64,workers=2 --plan tile=128x256x64,workers=2"
S=3000x3000x3000,2500x2500x2500,3500x3500x3500,2048x2048x2048,4096x4096x4096,1536x1536x1536,5000x3000x2500,3000x2000x1500,2200x1800x1300,1024x3000x2000,6000x1024x2048,1800x1800x4096,2800x1100x1500,1024x1024x1024
mkdir -p /tmp/r
for r in 1 2; do
  TESSEL_CACHE_DIR=/tmp/kc /tmp/bgc-cur --dtypes bf16 --shapes $S $P > /tmp/r/b$r.txt 2>&1
  echo "round $r at $SECONDS s"
done
TESSEL_CACHE_DIR=/tmp/kc /tmp/bgc-cur --dtypes fp16 --shapes 3000x3000x3000,2500x2500x2500,5000x3000x2500 $P > /tmp/r/h1.txt 2>&1
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]][p[10] if len(p) > 10 else 'def'].append('%s(%s)' % (p[7], p[4].replace('us', '')))
for k, vv in d.items():
    print('%-22s ' % k + '  '.join('%s:%s' % (s.replace('tile=', '').replace(',workers=', '/'), ','.join(v)) for s, v in vv.items()))
PY
echo "done at $SECONDS s"

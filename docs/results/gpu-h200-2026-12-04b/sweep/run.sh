#!/bin/bash
# bf16: every wgmma tile of the default table forced, and the default plan, on 34
# shapes with every dimension >= 1024 (30 drawn, 4 known wave tails). Two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
S=3240x3608x2216,2080x3336x2072,1880x1344x3856,1576x1952x1464,6112x3504x2632,3680x2272x1384,2856x4160x1536,3272x5608x3840,3352x5768x4296,2000x1368x1200,1976x1408x1632,1392x2120x2408,1664x1856x1120,3560x2504x4624,1720x2608x1104,4664x4448x2872,3576x3440x1448,1752x3816x1992,1256x4472x3888,1264x4352x1264,4208x1696x1168,1056x2296x2008,1872x1472x5312,5536x3664x5000,1304x1856x4816,3440x3728x1040,2344x1464x4376,3496x5024x2320,4256x3520x3808,1288x3088x1848,1800x1800x4096,1696x2696x2432,2560x4192x2680,1024x5000x3000
P="--plan tile=128x256x64,workers=2 --plan tile=192x192x64,workers=3 --plan tile=128x192x64,workers=2 --plan tile=192x128x64,workers=3 --plan tile=128x128x64,workers=2 --plan tile=64x128x64,workers=1"
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
for r in 1 2; do
  /tmp/bgc-cur --dtypes bf16 --shapes $S > /tmp/r/def$r.txt 2>&1
  /tmp/bgc-cur --dtypes bf16 --shapes $S $P > /tmp/r/tiles$r.txt 2>&1
  echo "round $r at $SECONDS s"
done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] == 'bf16':
            d[p[1]][p[10].replace('tile=', '').replace('x64,workers=', '/') if len(p) > 10 else 'def'].append(p[7])
for k, vv in d.items():
    print('%-16s ' % k + ' '.join('%s:%s' % (s, ','.join(v)) for s, v in vv.items()))
PY
echo "done at $SECONDS s"

#!/bin/bash
# The bars on shapes no table had: 14 drawn shapes with every dimension >= 1024 (ten
# with dimensions of multiples of 8, four arbitrary), bf16 and fp16 default plans
# beside cuBLAS, bf16 also under forced 192x192 tiles; and the square bars (bf16/fp16
# 4096^3 and 8192^3, tf32 and fp32 4096^3). Tree at ea49d9e.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur  # the tree at ea49d9e (.snap/cur)
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
S=5040x1088x3912,1696x2696x2432,2688x4064x2464,5536x3768x1192,4064x1640x5880,5848x1088x4848,2624x1040x5648,3448x3216x2352,2656x1664x1160,2560x4192x2680,2109x1148x1583,1457x4708x3007,5011x2308x1032,2932x3925x2503
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
/tmp/bgc-cur --dtypes bf16,fp16 --shapes $S > /tmp/r/def.txt 2>&1
/tmp/bgc-cur --dtypes bf16 --shapes $S --plan tile=192x192x64,workers=3 > /tmp/r/t192.txt 2>&1
/tmp/bgc-cur --dtypes bf16,fp16 --shapes 4096x4096x4096,8192x8192x8192 > /tmp/r/sq16.txt 2>&1
/tmp/bgc-cur --dtypes tf32,fp32 --shapes 4096x4096x4096 > /tmp/r/sq32.txt 2>&1
echo "bench at $SECONDS s"
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    v = f.split('/')[-1][:-4]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]][v] = '%s(%s)' % (p[7], p[4].replace('us',''))
for k, vv in d.items(): print('%-24s %s' % (k, '  '.join('%s:%s' % x for x in vv.items())))
PY
echo "done at $SECONDS s"

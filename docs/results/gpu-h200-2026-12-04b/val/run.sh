#!/bin/bash
# Default plans before (old = HEAD) and after the refitted wgmma tile rule (cur), on
# 30 fresh drawn bf16 shapes with every dimension >= 1024 and 10 mid-size and
# few-tile long-K shapes, alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/..
scripts_dir=$HERE/../cur/scripts
$scripts_dir/device_bench_gemm.sh $HERE/../old old > /tmp/b-old.log 2>&1 &
$scripts_dir/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 &
wait
[ -x /tmp/bgc-old ] && [ -x /tmp/bgc-cur ] || { tail -5 /tmp/b-old.log /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
S=2856x2984x5264,1240x2312x3184,4224x5104x2648,2416x1240x1096,1920x1384x1424,5600x1712x5520,1432x2576x2616,4272x1720x2880,2920x1920x3832,1544x5352x1848,4824x3552x5160,3592x5680x1032,4312x4800x1800,1768x1440x4408,5312x4952x1448,4168x1400x2304,2256x2792x4976,4320x2136x2488,1528x3568x1176,2280x4936x1280,3216x2496x3488,2512x1856x1360,1560x1592x4824,5360x1664x1280,2392x5416x2048,3456x2984x5496,4064x1512x2056,1424x2888x3336,2656x2200x1144,1672x2744x3488
F=1280x1280x1280,1536x1536x1536,1024x1024x1024,1536x1536x6144,1024x1024x8192,1536x1024x6144,1280x1024x6144,1100x1024x8192,1536x1536x8192,2048x1536x6144
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
for r in 1 2; do
  for v in old cur; do /tmp/bgc-$v --dtypes bf16 --shapes $S,$F > /tmp/r/$v$r.txt 2>&1; done
  echo "round $r at $SECONDS s"
done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    v = f.split('/')[-1][:3]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] == 'bf16': d[p[1]][v].append(p[7] + '(' + p[4].replace('us', '') + ')')
for k, vv in d.items(): print('%-16s old %s  cur %s' % (k, ','.join(vv['old']), ','.join(vv['cur'])))
PY
echo "done at $SECONDS s"

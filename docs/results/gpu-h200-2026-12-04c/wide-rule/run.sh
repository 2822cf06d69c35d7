#!/bin/bash
# The two new tiles (128x240, 192x176) forced on every measured bf16 shape whose
# default would move to them if they joined kWgmmaTiles at rate 1.0, against the
# default plans of the tree (without them); two rounds, alternating.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
A240=1432x2576x2616,1576x1952x1464,1752x3816x1992,1792x2048x4360,1800x1800x4096,2080x3336x2072,2280x4936x1280,2500x2500x2500,2536x5784x3296,2560x4192x2680,2680x1336x1728,2688x4064x2464,2768x2808x1024,3248x1152x1448,3272x5608x3840,3448x3216x2352,3456x2984x5496,3496x5024x2320,3560x2504x4624,3688x2056x1848,4064x1640x5880,4256x3520x3808,4320x2136x2488,4408x1416x4232,4824x3552x5160,4944x2328x4288,5000x3000x2500,5112x1800x4496,5312x4952x1448,5848x1088x4848
A176=1288x3088x1848,2200x1800x1300,2368x1576x5776,2856x2984x5264,2856x4160x1536,3008x5384x2632,3240x3608x2216,3440x3728x1040,3592x2944x1416,3592x5680x1032,3752x4488x1632,4208x1696x1168,4664x4448x2872,5536x3664x5000,6112x3504x2632
run() { /tmp/bgc-cur --dtypes bf16 --shapes $2 ${3:+--plan $3} >> /tmp/r/$1$r.txt 2>&1; }
for r in 1 2; do
  run def $A240,$A176
  run t128x240 $A240 tile=128x240x64,workers=2
  run t192x176 $A176 tile=192x176x64,workers=3
  echo "round $r at $SECONDS s"
done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    v = f.split('/')[-1][:-4]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] == 'bf16': d[p[1]][v] = '%s%s' % (p[7], '' if float(p[9]) < 1e-5 else '!' + p[9])
for k, vv in d.items(): print('%-16s %s' % (k, ' '.join('%s:%s' % x for x in sorted(vv.items()))))
PY
grep -i -E "error|what" /tmp/r/*.txt | head -5
echo "done at $SECONDS s"

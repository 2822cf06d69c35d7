#!/bin/bash
# Tile widths that are no multiple of 64 (wgmma n 144..240), forced, against the
# default plans on the bf16 shapes under 0.75x cuBLAS; two rounds. GPU tests first.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
(DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1) &
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 &
wait
ls /tmp/o-cur/gpu_tests /tmp/bgc-cur || { tail -5 /tmp/check.log /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
timeout 200 /tmp/o-cur/gpu_tests --gtest_filter='CudaGemm.*:TmaGpu.*:TmaPipelineGpu.*' > /tmp/r-gpu.txt 2>&1
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|Expected|Which|error" /tmp/r-gpu.txt | head -20
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
ALL=1576x1952x1464,1024x5000x3000,1432x2576x2616,4064x1512x2056,5112x1800x4496,1184x3304x2504,3352x5768x4296,1104x5368x4440,1544x5352x1848,4696x2040x3456,2680x1336x1728,4168x2280x1272,1456x4024x1032,1800x1800x4096,1672x2744x3488
run() { /tmp/bgc-cur --dtypes bf16 --shapes $2 ${3:+--plan $3} >> /tmp/r/$1$r.txt 2>&1; }
for r in 1 2; do
  run def $ALL
  run t128x208 1576x1952x1464,5112x1800x4496,1104x5368x4440,4696x2040x3456,1456x4024x1032 tile=128x208x64,workers=2
  run t128x176 1024x5000x3000 tile=128x176x64,workers=2
  run t128x160 1024x5000x3000 tile=128x160x64,workers=2
  run t128x240 1432x2576x2616,2680x1336x1728,1800x1800x4096 tile=128x240x64,workers=2
  run t128x224 4064x1512x2056,1104x5368x4440,2680x1336x1728,1456x4024x1032 tile=128x224x64,workers=2
  run t192x144 1576x1952x1464,1800x1800x4096 tile=192x144x64,workers=3
  run t192x176 1432x2576x2616 tile=192x176x64,workers=3
  run t192x208w3 5112x1800x4496,3352x5768x4296,1544x5352x1848,4696x2040x3456,4168x2280x1272,1672x2744x3488 tile=192x208x64,workers=3,window=3
  run t192x208 5112x1800x4496,1672x2744x3488 tile=192x208x64,workers=3
  run t192x224w3 3352x5768x4296,1672x2744x3488 tile=192x224x64,workers=3,window=3
  echo "round $r at $SECONDS s"
done
for f in /tmp/r-gpu.txt /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    v = f.split('/')[-1][:-4]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] == 'bf16': d[p[1]][v] = '%s(%s)%s' % (p[7], p[4].replace('us', ''), '' if p[9] in ('0','1e-07') or float(p[9]) < 1e-5 else '!' + p[9])
for k, vv in d.items(): print('%-16s %s' % (k, ' '.join('%s:%s' % x for x in sorted(vv.items()))))
PY
grep -i -E "error|what" /tmp/r/*.txt | head -5
echo "done at $SECONDS s"

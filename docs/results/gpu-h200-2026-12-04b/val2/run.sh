#!/bin/bash
# The refitted wgmma tile rule (cur) against HEAD (old) on 30 more drawn bf16 shapes
# with every dimension >= 1024 (a third draw, no shape of the fit), alternating, two
# rounds; before them every CudaGemm test on cur.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
(DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1) &
scripts/device_bench_gemm.sh $HERE/../old old > /tmp/b-old.log 2>&1 &
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 &
wait
ls /tmp/o-cur/gpu_tests /tmp/bgc-old /tmp/bgc-cur || { tail -5 /tmp/check.log /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
timeout 300 /tmp/o-cur/gpu_tests --gtest_brief=1 --gtest_filter='CudaGemm.*' > /tmp/r-gpu.txt 2>&1
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" /tmp/r-gpu.txt | head -20
S=2768x2808x1024,1376x5936x3288,2816x4416x2272,5432x3776x4632,1456x4024x1032,4408x1416x4232,4168x2280x1272,4944x2328x4288,4696x2040x3456,2656x3256x1408,3008x5384x2632,2536x5784x3296,3752x4488x1632,1184x3304x2504,5112x1800x4496,3592x2944x1416,2952x2192x3304,1544x1384x1384,1792x2048x4360,1104x5368x4440,2144x1744x4192,2368x1576x5776,2680x1336x1728,3688x2056x1848,3248x1152x1448,2872x1248x4872,1376x2944x2352,4696x3520x5936,1496x2896x1920,1520x3232x1728
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
for r in 1 2; do
  for v in old cur; do /tmp/bgc-$v --dtypes bf16 --shapes $S > /tmp/r/$v$r.txt 2>&1; done
  echo "round $r at $SECONDS s"
done
for f in /tmp/r-gpu.txt /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
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

#!/bin/bash
# The 94 bf16 shapes with every dimension >= 1024 (sweep/, val/ and val2/ of
# gpu-h200-2026-12-04b) and pitch pairs: the default plan against --plan cluster=2,
# alternating, two rounds; then the cluster GPU test.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
rm -f /tmp/bgc-cur; scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
S=1024x5000x3000,1056x2296x2008,1104x5368x4440,1184x3304x2504,1240x2312x3184,1256x4472x3888,1264x4352x1264,1288x3088x1848,1304x1856x4816,1376x2944x2352,1376x5936x3288,1392x2120x2408,1424x2888x3336,1432x2576x2616,1456x4024x1032,1496x2896x1920,1520x3232x1728,1528x3568x1176,1544x1384x1384,1544x5352x1848,1560x1592x4824,1576x1952x1464,1664x1856x1120,1672x2744x3488,1696x2696x2432,1720x2608x1104,1752x3816x1992,1768x1440x4408,1792x2048x4360,1800x1800x4096,1872x1472x5312,1880x1344x3856,1920x1384x1424,1976x1408x1632,2000x1368x1200,2080x3336x2072,2144x1744x4192,2256x2792x4976,2280x4936x1280,2344x1464x4376,2368x1576x5776,2392x5416x2048,2416x1240x1096,2512x1856x1360,2536x5784x3296,2560x4192x2680,2656x2200x1144,2656x3256x1408,2680x1336x1728,2768x2808x1024,2816x4416x2272,2856x2984x5264,2856x4160x1536,2872x1248x4872,2920x1920x3832,2952x2192x3304,3008x5384x2632,3216x2496x3488,3240x3608x2216,3248x1152x1448,3272x5608x3840,3352x5768x4296,3440x3728x1040,3456x2984x5496,3496x5024x2320,3560x2504x4624,3576x3440x1448,3592x2944x1416,3592x5680x1032,3680x2272x1384,3688x2056x1848,3752x4488x1632,4064x1512x2056,4168x1400x2304,4168x2280x1272,4208x1696x1168,4224x5104x2648,4256x3520x3808,4272x1720x2880,4312x4800x1800,4320x2136x2488,4408x1416x4232,4664x4448x2872,4696x2040x3456,4696x3520x5936,4824x3552x5160,4944x2328x4288,5112x1800x4496,5312x4952x1448,5360x1664x1280,5432x3776x4632,5536x3664x5000,5600x1712x5520,6112x3504x2632
# Pitch pairs: N (B's row pitch) a multiple of 128 bytes, and 16 bytes off it.
S=$S,1184x3328x2504,1184x3336x2504,2048x2056x2048,1304x1864x4816,1264x4360x1264,1576x1920x1464,1576x1928x1464
rm -rf /tmp/r; mkdir -p /tmp/r
for r in 1 2; do
  /tmp/bgc-cur --dtypes bf16 --shapes $S > /tmp/r/def$r.txt 2>&1
  /tmp/bgc-cur --dtypes bf16 --shapes $S --plan cluster=2 > /tmp/r/c2$r.txt 2>&1
  echo "round $r at $SECONDS s"
done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    v = f.split('/')[-1][:-5]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] == 'bf16': d[p[1]][v].append(p[7] + ('' if float(p[9]) < 1e-5 else '!' + p[9]))
for k, vv in d.items(): print('%-16s ' % k + ' '.join('%s:%s' % (s, ','.join(v)) for s, v in vv.items()))
PY
grep -i -E "error|what" /tmp/r/*.txt | head -5
echo "done at $SECONDS s"
DEB=$HERE/../../.deb OUT=$OUT STEPS="" bash scripts/device_check.sh > /dev/null || exit 1
(cd tests/cuda && timeout 200 /tmp/o-cur/gpu_tests --gtest_filter='CudaGemm.ClusterPlans*') > $OUT/cluster-test.txt 2>&1
echo "cluster test rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cluster-test.txt | tr '\n' ' ')"

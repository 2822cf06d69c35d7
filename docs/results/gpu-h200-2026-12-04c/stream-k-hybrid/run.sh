#!/bin/bash
# Stream-K after whole data-parallel waves (all but the last), its shared-tile sum in
# 64-column parts, band tile order, against the default plans, bf16, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
(DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1) &
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 &
wait
ls /tmp/o-cur/gpu_tests /tmp/bgc-cur || { tail -5 /tmp/check.log /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
timeout 200 /tmp/o-cur/gpu_tests --gtest_filter='CudaGemm.StreamK*' > /tmp/r-gpu.txt 2>&1
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|Expected|Which|error" /tmp/r-gpu.txt | head -20
S=1576x1952x1464,3352x5768x4296,1800x1800x4096,1024x5000x3000,1432x2576x2616,1544x5352x1848,4064x1512x2056,1672x2744x3488,1456x4024x1032,4168x2280x1272,4696x2040x3456,1184x3304x2504,5112x1800x4496,1104x5368x4440,2680x1336x1728,4096x4096x4096,3000x3000x3000,2048x2048x2048,1696x2696x2432,6112x3504x2632,2560x1664x2560,5120x1664x1536,2368x1576x5776,8192x8192x8192,1280x1280x1280,1536x1536x8192
mkdir -p /tmp/r
export TESSEL_CACHE_DIR=/tmp/kc
for r in 1 2; do
/tmp/bgc-cur --dtypes bf16 --shapes $S > /tmp/r/def$r.txt 2>&1
/tmp/bgc-cur --dtypes bf16 --shapes $S --plan stream_k > /tmp/r/sk$r.txt 2>&1
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
        if len(p) >= 10 and p[0] == 'bf16': d[p[1]][v] = '%s(%s) %s' % (p[7], p[4].replace('us', ''), p[9])
for k, vv in d.items(): print('%-16s %s' % (k, '  '.join('%s:%s' % x for x in vv.items())))
PY
echo "done at $SECONDS s"

#!/bin/bash
# (1) The split-K GPU tests on this tree (partials' rows padded); (2) the default
# against 64x128 and 128x128 tiles without split on few-tile long-K shapes near 1024.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
(DEB=$HERE/../.deb OUT=$OUT STEPS="" bash scripts/device_check.sh > /tmp/dc.log 2>&1) &
(scripts/device_bench_gemm.sh . new > /tmp/b-new.log 2>&1) &
wait
echo "built at $SECONDS s"; tail -2 /tmp/dc.log
(cd tests/cuda && timeout 200 /tmp/o-cur/cuda_tests --gtest_filter='TmaPipelineGpu.SplitK*:TmaPipelineCompile.SplitK*') > $OUT/split-tests.txt 2>&1
echo "cuda split tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/split-tests.txt | tr '\n' ' ')"
timeout 200 /tmp/o-cur/gpu_tests --gtest_filter='CudaGemm.DefaultSixteenBitPlansTakeTmaWhereRowsAllow:CudaGemm.RandomShapes' > $OUT/split-gpu-tests.txt 2>&1
echo "gpu tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/split-gpu-tests.txt | tr '\n' ' ')"
S=1000x1000x4096,1024x1024x4096,1000x1000x8192,1024x1024x8192,1536x1024x8192,1280x1024x12288,1024x1536x6144,1100x1000x4096,1200x1200x6000
for r in 1 2; do
  TESSEL_CACHE_DIR=/tmp/kc /tmp/bgc-new --dtypes bf16,fp16 --shapes $S --plan "" --plan tile=64x128x64,workers=1 --plan tile=128x128x64,workers=2 > $OUT/plans-$r.txt 2>&1
  echo "round $r at $SECONDS s"
done
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + '/plans-*.txt')):
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16'):
            d[p[0] + ' ' + p[1]][p[10] if len(p) > 10 else 'default'].append('%s(%s)' % (p[7], p[4]))
for k, vv in d.items():
    print(k); [print('   %-30s %s' % (pl, ' '.join(x))) for pl, x in vv.items()]
PY
grep -ih "error" $OUT/plans-*.txt | sort | uniq -c | head -5
echo "done at $SECONDS s"

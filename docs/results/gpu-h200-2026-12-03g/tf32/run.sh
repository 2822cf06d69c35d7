#!/bin/bash
# tf32 on mma.sync splits too (cur) against the tree before small blocks split (old):
# the GPU tests it touches, then bench_gemm_cuda of both trees on few-tile long-K and
# mid shapes, alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
(DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1) &
for v in old cur; do (scripts/device_bench_gemm.sh $HERE/../$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur /tmp/o-cur/gpu_tests || { tail -5 /tmp/b-*.log /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
timeout 200 /tmp/o-cur/gpu_tests --gtest_brief=1 --gtest_filter='CudaGemm.SmallBlocks*:CudaGemm.SeedShapes*' > $OUT/gpu-tests.txt 2>&1
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" $OUT/gpu-tests.txt | head -20
B=64x96x8000,64x64x16384,520x264x770,400x400x800,700x180x1000,256x256x1024,600x600x300,200x200x200
mkdir -p /tmp/r
for r in 1 2; do
  for v in old cur; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes tf32 --shapes $B > /tmp/r/$v-b$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s,h%s)' % (p[7], p[4].replace('us',''), p[6]))
print('%-22s %-36s %-36s (cuBLAS/tessel dev, tessel dev us, host ratio)' % ('dtype shape', 'old', 'cur'))
for k, vv in d.items(): print('%-22s %-36s %-36s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur'))))
PY
echo "done at $SECONDS s"

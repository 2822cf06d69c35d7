#!/bin/bash
# fp32 split-K (cur) against HEAD (old): GPU tests of cur first (CudaGemm.*, the tma
# split and fused tests), then bench_gemm_cuda of both trees, alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
(DEB=$HERE/../.deb OUT=$OUT/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1) &
for v in old cur; do (scripts/device_bench_gemm.sh $HERE/$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur /tmp/o-cur/gpu_tests || { tail -5 /tmp/b-*.log /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
timeout 200 /tmp/o-cur/gpu_tests --gtest_brief=1 --gtest_filter='CudaGemm.*' > $OUT/gpu-tests.txt 2>&1 &
(cd tests/cuda && timeout 200 /tmp/o-cur/cuda_tests --gtest_brief=1 --gtest_filter='TmaPipelineGpu.SplitK*:TmaPipelineGpu.FusedSplitK*:TmaGpu.*:TmaPipelineGpu.SmallShapes*') > $OUT/cuda-tests.txt 2>&1
wait
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" $OUT/gpu-tests.txt $OUT/cuda-tests.txt | head -20
S=64x2048x8192,16x4096x4096,32x1024x8192,40x700x3000,256x256x4096,128x512x2048,64x4096x16384,200x300x10000
for r in 1 2; do
  for v in old cur; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes fp32 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    if v not in ('old', 'cur'): continue
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s,%s)' % (p[7], p[4].replace('us',''), p[9]))
print('%-22s %-40s %-40s (cuBLAS/tessel dev, tessel us, diff)' % ('dtype shape', 'old', 'cur'))
for k, vv in d.items(): print('%-22s %-40s %-40s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur'))))
PY
echo "done at $SECONDS s"

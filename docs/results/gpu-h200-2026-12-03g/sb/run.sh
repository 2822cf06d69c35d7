#!/bin/bash
# Small-block split-K (cur) against HEAD (old): GPU tests of cur first (CudaGemm.*, the
# tma split tests), compute-sanitizer over the new split test, then bench_gemm_cuda of
# both trees, alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
(DEB=$HERE/../../.deb OUT=$OUT/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1) &
for v in old cur; do (scripts/device_bench_gemm.sh $HERE/../$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur /tmp/o-cur/gpu_tests || { tail -5 /tmp/b-*.log /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
timeout 200 /tmp/o-cur/gpu_tests --gtest_brief=1 --gtest_filter='CudaGemm.*' > $OUT/gpu-tests.txt 2>&1 &
(cd tests/cuda && timeout 200 /tmp/o-cur/cuda_tests --gtest_brief=1 --gtest_filter='TmaPipelineGpu.SplitK*:TmaPipelineGpu.SmallShapes*') > $OUT/cuda-tests.txt 2>&1
wait
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" $OUT/gpu-tests.txt $OUT/cuda-tests.txt | head -20
for tool in memcheck racecheck synccheck; do
  (timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/o-cur/gpu_tests \
    --gtest_filter='CudaGemm.SmallBlocksFewTilesLongKSplit' > /tmp/san-$tool.txt 2>&1; echo "rc=$?" >> /tmp/san-$tool.txt) &
done
wait
for tool in memcheck racecheck synccheck; do
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) |^rc=' /tmp/san-$tool.txt | tr '\n' ' ')"
done | tee $OUT/sanitizer.txt
echo "sanitizers at $SECONDS s"
B=64x64x16384,32x128x8192,128x128x4096,100x100x10000,16x1024x8192,256x128x2048,200x200x3000,48x96x7000,150x120x5000,200x300x400,256x256x256,128x128x1024,512x512x512
F=16x4096x4096,200x300x10000,300x1000x8000,250x250x6000,128x1024x4096,64x64x16384,96x500x12000,256x256x256,200x200x200,512x512x2048
for r in 1 2; do
  for v in old cur; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16 --shapes $B > $OUT/$v-b$r.txt 2>&1
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes fp32 --shapes $F > $OUT/$v-f$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
TESSEL_CACHE_DIR=/tmp/kc-cur /tmp/bgc-cur --dtypes fp16 --shapes 64x64x16384,100x100x10000,200x200x3000,200x300x400 > $OUT/cur-h1.txt 2>&1
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    if v not in ('old', 'cur'): continue
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s,%s,h%s)' % (p[7], p[4].replace('us',''), p[9], p[6]))
print('%-22s %-48s %-48s (cuBLAS/tessel dev, tessel dev us, diff, host ratio)' % ('dtype shape', 'old', 'cur'))
for k, vv in d.items(): print('%-22s %-48s %-48s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur'))))
PY
echo "done at $SECONDS s"

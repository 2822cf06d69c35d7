#!/bin/bash
# Three-consumer-warpgroup wgmma tiles (192x192, 192x128) in the default 16-bit plans
# (cur) against HEAD (old): the GPU tests they touch, compute-sanitizer over the tma
# variants, then bench_gemm_cuda of both trees alternating on shapes with every
# dimension >= 1024, two rounds; tile and split variants on the two shapes that split.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur  # the tree with three-warpgroup tiles (.snap/cur); old: HEAD ba62899 (.snap/old)
(DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1) &
for v in old cur; do (scripts/device_bench_gemm.sh $HERE/../$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur /tmp/o-cur/gpu_tests /tmp/o-cur/cuda_tests || { tail -5 /tmp/b-*.log /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
timeout 240 /tmp/o-cur/gpu_tests --gtest_brief=1 --gtest_filter='CudaGemm.DefaultSixteen*:CudaGemm.WgmmaPlansEveryWindow' > /tmp/r-gpu.txt 2>&1
(cd tests/cuda && timeout 200 /tmp/o-cur/cuda_tests --gtest_brief=1 --gtest_filter='TmaPipelineGpu.*') > /tmp/r-cuda.txt 2>&1
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" /tmp/r-gpu.txt /tmp/r-cuda.txt | head -20
S=3000x3000x3000,2048x2048x2048,4096x4096x4096,1536x1536x1536,6000x1024x2048,1800x1800x4096,2560x3072x2048,3072x3072x1024,2304x4096x1536,4000x2400x2048,2560x2560x2560,3584x1536x2048,1024x5000x3000,1408x2816x1024,1280x1024x6144,1100x1024x8192,8192x8192x8192
mkdir -p /tmp/r
for r in 1 2; do
  for v in old cur; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16 --shapes $S > /tmp/r/$v-b$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
for v in old cur; do
  TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes fp16 --shapes 3000x3000x3000,6000x1024x2048,2560x3072x2048 > /tmp/r/$v-h1.txt 2>&1
done
P="--plan split=3 --plan tile=192x128x64,workers=3,split=2 --plan tile=192x128x64,workers=3,split=3 --plan tile=192x192x64,workers=3,split=3 --plan tile=128x192x64,workers=2,split=3 --plan tile=128x128x64,workers=2,split=2"
TESSEL_CACHE_DIR=/tmp/kc-cur /tmp/bgc-cur --dtypes bf16 --shapes 1280x1024x6144,1100x1024x8192,1024x1024x8192 $P > /tmp/r/var.txt 2>&1
echo "bench at $SECONDS s"
for tool in memcheck racecheck synccheck; do
  (cd tests/cuda && timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/o-cur/cuda_tests \
    --gtest_filter='TmaPipelineGpu.SmallShapesForSanitizers' > /tmp/san-$tool.txt 2>&1; echo "rc=$?" >> /tmp/san-$tool.txt) &
done
wait
for tool in memcheck racecheck synccheck; do
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) |^rc=' /tmp/san-$tool.txt | tr '\n' ' ')"
done > /tmp/r-san.txt
echo "sanitizers at $SECONDS s"
for f in /tmp/r-gpu.txt /tmp/r-cuda.txt /tmp/r-san.txt /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s)' % (p[7], p[4].replace('us','')))
print('%-22s %-30s %-30s (cuBLAS/tessel dev, tessel dev us)' % ('dtype shape', 'old', 'cur'))
for k, vv in d.items(): print('%-22s %-30s %-30s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur'))))
for l in open(sys.argv[1] + '/var.txt'):
    p = l.split()
    if len(p) >= 10 and p[0] == 'bf16': print('%-22s %s(%s) %s' % (p[1], p[7], p[4], p[10] if len(p) > 10 else 'default'))
PY
cat /tmp/r-san.txt
echo "done at $SECONDS s"

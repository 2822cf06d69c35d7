#!/bin/bash
# Sixty-fourth session, second call: the fma atom reading through 32-bit window
# addresses wherever a thread holds up to 64 accumulators (emit_fma_mma). The tree's
# cuda/gpu tests (the wgmma window sweep left out), compute-sanitizer over the fp32
# tile tests, and fp32 before (.snap/old = `git archive 5195852 src include bench
# scripts`) against after, two alternating rounds, on shapes of every size class.
# carry [".deb", ".snap"].
cd "$(dirname "$0")/../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bnew.log 2>&1 &
bash scripts/device_bench_gemm.sh .snap/old old > /tmp/bold.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -1 /tmp/bnew.log; tail -1 /tmp/bold.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.txt 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.txt | grep -v Skipped | tail -12
F='CudaGemm.DeepFp32TilesMatchTheOracle:CudaGemm.FmaAtomThroughTensorMapsSmallShapes'
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool build-dev/test_gpu --gtest_filter="$F" > $OUT/san-$tool.txt 2>&1
  echo "$tool rc=$? at $SECONDS s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-$tool.txt | tr '\n' ' ')"
done
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,1500x2500x700,700x900x1100,5000x3000x2500,3001x2003x1499
T=250x130x250,127x193x61,64x64x64,256x256x1024,16x4096x4096,4000x1000x6000,1100x1000x600
for r in 1 2; do
  for t in old new; do
    timeout 100 /tmp/bgc-$t --dtypes fp32 --shapes $S >> $OUT/bench-$t.txt 2>&1
    timeout 60 /tmp/bgc-$t --dtypes fp32 --shapes $T >> $OUT/bench-$t.txt 2>&1
    timeout 40 /tmp/bgc-$t --dtypes fp32 --shapes 3000x2000x1500,1000x1000x1000 --beta 1 >> $OUT/beta1-$t.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
for f in bench-old bench-new beta1-old beta1-new; do
  echo "== $f"
  awk '$1 == "fp32" {v[$2]=v[$2]" "$8} END{for(k in v) print k, v[k]}' $OUT/$f.txt | sort
done

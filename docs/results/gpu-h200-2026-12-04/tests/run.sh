#!/bin/bash
# The tree at 5161d8e (three-warpgroup tiles, 192x192 at 0.94): every CudaGemm test,
# every TmaPipelineGpu test (split-K now under the 192x192 and 192x128 variants too),
# and compute-sanitizer memcheck, racecheck and synccheck over the split-K test.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur  # the tree at 5161d8e (.snap/cur)
DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1
ls /tmp/o-cur/gpu_tests /tmp/o-cur/cuda_tests || { tail -5 /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
timeout 300 /tmp/o-cur/gpu_tests --gtest_brief=1 --gtest_filter='CudaGemm.*' > /tmp/r-gpu.txt 2>&1 &
(cd tests/cuda && timeout 300 /tmp/o-cur/cuda_tests --gtest_brief=1 --gtest_filter='TmaPipelineGpu.*:TmaPipelineCompile.*') > /tmp/r-cuda.txt 2>&1
wait
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" /tmp/r-gpu.txt /tmp/r-cuda.txt | head -20
for tool in memcheck racecheck synccheck; do
  (cd tests/cuda && timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/o-cur/cuda_tests \
    --gtest_filter='TmaPipelineGpu.SplitKMatchesTheOracle' > /tmp/san-$tool.txt 2>&1; echo "rc=$?" >> /tmp/san-$tool.txt) &
done
wait
for tool in memcheck racecheck synccheck; do
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) |^rc=' /tmp/san-$tool.txt | tr '\n' ' ')"
done > /tmp/r-san.txt
cat /tmp/r-san.txt
for f in /tmp/r-gpu.txt /tmp/r-cuda.txt /tmp/r-san.txt; do echo "== $f"; cat $f; done > $OUT/tests.txt
echo "done at $SECONDS s"

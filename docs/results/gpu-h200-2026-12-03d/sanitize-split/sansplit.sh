#!/bin/bash
# compute-sanitizer memcheck and racecheck over the split-K GPU test (partials on padded rows).
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
DEB=$HERE/../.deb OUT=$OUT STEPS="" bash scripts/device_check.sh > /tmp/dc.log 2>&1 || { tail -20 /tmp/dc.log; exit 1; }
echo "built at $SECONDS s"
cd tests/cuda
for tool in memcheck racecheck synccheck; do
  (timeout 250 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/o-cur/cuda_tests \
    --gtest_filter='TmaPipelineGpu.SplitKMatchesTheOracle' > $OUT/san-$tool.txt 2>&1; echo "$tool rc=$?" > /tmp/rc-$tool) &
done
wait
for tool in memcheck racecheck synccheck; do
  echo "$(cat /tmp/rc-$tool): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' $OUT/san-$tool.txt | tr '\n' ' ')"
done
echo "done at $SECONDS s"

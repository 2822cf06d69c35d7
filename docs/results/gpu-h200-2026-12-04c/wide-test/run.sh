#!/bin/bash
# CudaGemm.TileWidthsOffThePanelsMatchTheOracle on the H200, then compute-sanitizer
# memcheck over it.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1
ls /tmp/o-cur/gpu_tests || { tail -5 /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
timeout 200 /tmp/o-cur/gpu_tests --gtest_filter='CudaGemm.TileWidths*:CudaGemm.StreamK*' > /tmp/r-gpu.txt 2>&1
echo "tests at $SECONDS s"; grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |Failure|Expected|Which|error" /tmp/r-gpu.txt | head -20
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/o-cur/gpu_tests --gtest_filter='CudaGemm.TileWidths*' > /tmp/r-mem.txt 2>&1; echo "memcheck rc=$?" >> /tmp/r-mem.txt
tail -3 /tmp/r-mem.txt
cat /tmp/r-gpu.txt /tmp/r-mem.txt > $OUT/raw.txt
echo "done at $SECONDS s"

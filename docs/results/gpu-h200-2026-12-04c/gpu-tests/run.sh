#!/bin/bash
# Every GPU test (gpu_tests, cuda_tests) on the H200 at this session's last commit.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
DEB=$HERE/../../.deb OUT=/tmp/check STEPS="" bash scripts/device_check.sh > /tmp/check.log 2>&1
ls /tmp/o-cur/gpu_tests /tmp/o-cur/cuda_tests || { tail -5 /tmp/check.log; exit 1; }
echo "built at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
timeout 400 /tmp/o-cur/gpu_tests > /tmp/r-gpu.txt 2>&1; echo "gpu_tests rc=$?" >> /tmp/r-gpu.txt
(cd tests/cuda && timeout 150 /tmp/o-cur/cuda_tests) > /tmp/r-cuda.txt 2>&1; echo "cuda_tests rc=$?" >> /tmp/r-cuda.txt
for f in /tmp/r-gpu.txt /tmp/r-cuda.txt; do grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|rc=" $f | head -12; done
cat /tmp/r-gpu.txt /tmp/r-cuda.txt > $OUT/raw.txt
echo "done at $SECONDS s"

#!/bin/bash
# Fifty-second session, seventh call: CudaCompile.Fp32TwoBlockTilesCompileWithoutSpills
# failed in the sixth call (its spill counts were -1: NVRTC's log there lacked ptxas's
# report); it now checks the frame there. The cuda compile tests on the GPU machine.
# One `run` call, carry [".deb"].
cd "$(dirname "$0")/../../../.."
timeout 300 bash scripts/device_cmake.sh build-dev test_cuda || exit 1
echo "built at $SECONDS s"
(cd build-dev && timeout 150 ctest -R 'CudaCompile\.' -j8 --output-on-failure) > $OUT/spill-test.log 2>&1
echo "ctest rc=$?"; grep -E "tests passed|tests failed|\*\*\*" $OUT/spill-test.log | tail -6

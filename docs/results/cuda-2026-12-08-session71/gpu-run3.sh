#!/bin/bash
# Seventy-first session, third call: after the wgmma check of warpgroups side by side
# (cuda_emit.cpp, mark_wgmma_operands) and the bench's WRONG mark. The cuda/gpu tests;
# then a plan whose warpgroups split 192 columns (refused now) and one whose split is
# whole panels (128x256 over 1x2), against cuBLAS. carry [".deb"].
cd "$(dirname "$0")/../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bnew.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -1 /tmp/bnew.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.txt 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.txt | grep -v Skipped | tail -12
for p in tile=192x192x64,workers=2,grid=1x2 tile=128x256x64,workers=2,grid=1x2 tile=128x256x64,workers=2,grid=1x2,cluster=2; do
  timeout 60 /tmp/bgc-new --dtypes bf16,fp16 --shapes 2224x2160x3000,1000x1000x1000 --plan $p >> $OUT/halves.txt 2>&1
  echo "$p rc=$?" >> $OUT/halves.txt
done
cut -c1-220 $OUT/halves.txt

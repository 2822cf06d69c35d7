#!/bin/bash
# Fifty-second session: the fma atom reads its shared operands through 32-bit window
# addresses (tsl_lds*, shared_addr's unsigned form, src/target/cuda/cuda_emit.cpp);
# the 128x128 fp32 kernel no longer spills. One `run` call, carry [".deb", ".snap"]:
# builds bench_gemm_cuda from .snap/old (abca090, before the change) and from this
# tree, and this tree's GPU tests; runs the cuda/gpu tests but the wgmma window sweep
# (no wgmma code changed), fp32 old and new in alternating rounds (beta 0), the
# sanitizers over two fp32 tests, and the four dtypes' squares with the new build.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
S=3000x2000x1500,3500x2500x1800,1500x2500x700,1100x1000x600,2000x1000x3000,4096x4096x4096,2048x2048x2048,256x256x256,127x193x61
for round in 1 2 3; do for b in old new; do
  [ $SECONDS -gt 420 ] && break 2
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 45 /tmp/bgc-$b --dtypes fp32 --shapes $S >> $OUT/ab.txt 2>&1
done; done
echo "== fp32, cuBLAS time / tessel time (device): round impl: shape ratio ..."
awk '/^== /{r=$0; next} $1=="fp32" {print r, $2, $8}' $OUT/ab.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s %s", $3, $4} END {print ""}'
for tool in memcheck racecheck synccheck; do
  [ $SECONDS -gt 480 ] && break
  timeout 40 compute-sanitizer --tool $tool build-dev/test_gpu \
    --gtest_filter='CudaGemm.FmaAtomThroughTensorMapsSmallShapes:CudaGemm.DeepFp32TilesMatchTheOracle' > $OUT/san-$tool.txt 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-$tool.txt | tr '\n' ' ')"
done
[ $SECONDS -lt 530 ] && timeout 60 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes 4096x4096x4096,8192x8192x8192 > $OUT/squares.txt 2>&1
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {print $1, $2, $8}' $OUT/squares.txt

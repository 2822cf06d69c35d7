#!/bin/bash
# Fifty-third session: kernels compile first as their aligned variant (emit_cuda's
# assume_aligned: tensors on 16 bytes, row strides multiples of 16 bytes); other
# launches run the general variant. One `run` call, carry [".deb", ".snap"]:
# builds bench_gemm_cuda from .snap/old (3ccb9a7, before the change) and from this
# tree, this tree's GPU tests, and .snap/broken's test_gpu (this tree with execute's
# address check removed); runs the cuda/gpu tests but the wgmma window sweep, the new
# test on the broken build (it must fail), the sanitizers over the new test, old and
# new in alternating rounds on small and mid shapes of every dtype, and cold compiles.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
(OUT=/tmp/broken-out timeout 200 bash .snap/broken/scripts/device_cmake.sh build-broken test_gpu > /tmp/broken-build.log 2>&1;
 echo "broken build rc=$?" >> /tmp/broken-build.log) &
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
wait
cat /tmp/broken-build.log
T=CudaGemm.LaunchesOffSixteenBytesRunTheGeneralVariant
timeout 60 .snap/broken/build-broken/test_gpu --gtest_filter=$T > $OUT/broken-test.txt 2>&1
echo "broken build, $T: rc=$? $(grep -E 'PASSED|FAILED|Failure|error' $OUT/broken-test.txt | head -4 | tr '\n' ' ')"
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool build-dev/test_gpu --gtest_filter=$T > $OUT/san-$tool.txt 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-$tool.txt | tr '\n' ' ')"
done
for s in "64 64 64 --dtype fp32" "127 193 61 --dtype fp32" "200 300 400 --dtype bf16" "256 256 256 --dtype fp16" \
         "3000 2000 1500 --dtype fp32" "4096 4096 4096 --dtype fp32 --beta 0"; do
  echo "$s: $(TESSEL_PASS_TIMING=1 TESSEL_CACHE_DIR=$(mktemp -d) build-dev/tessel explain $s --target cuda 2>&1 |
    grep 'tessel: nvrtc')"
done > $OUT/cold-compile.txt
cat $OUT/cold-compile.txt
S=64x64x64,127x193x61,200x300x400,250x130x250,256x256x256,512x512x512,1000x1000x1000,3000x2000x1500
for round in 1 2 3; do for b in old new; do
  [ $SECONDS -gt 500 ] && break 2
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 60 /tmp/bgc-$b --dtypes fp32,tf32,bf16,fp16 --shapes $S >> $OUT/ab.txt 2>&1
done; done
echo "== cuBLAS time / tessel time, host wall and device: round impl: dtype shape host dev ..."
awk '/^== /{r=$0; next} $1 ~ /^(fp32|tf32|bf16|fp16)$/ {print r, $1, $2, $7, $8}' $OUT/ab.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s/%s %s %s", $3, $4, $5, $6} END {print ""}'

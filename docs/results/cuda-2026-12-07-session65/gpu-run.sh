#!/bin/bash
# Sixty-fifth session: the bars on whatever card the call gets (machine.txt), on the
# tree with the sixty-fourth session's 32-bit shared reads in the fp32 tiles, and the
# cuda bind's refusal of sizes a program was not specialized for
# (CudaOps.SpecializedProgramsRefuseOtherSizes). carry [".deb"].
# Checks: the cuda/gpu tests (the wgmma window sweep left out), compute-sanitizer
# memcheck over the new test. Bench: three rounds of the squares the bars name, the
# 16-bit shapes with every dimension >= 1024 that ran under 0.75, and shapes of each
# class no earlier session measured.
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
build-dev/test_gpu --gtest_filter='CudaOps.Specialized*' > $OUT/specialized.txt 2>&1
echo "specialized rc=$?: $(grep -E 'PASSED|FAILED|SKIPPED' $OUT/specialized.txt | tr '\n' ' ')"
timeout 100 compute-sanitizer --tool memcheck build-dev/test_gpu --gtest_filter='CudaOps.Specialized*' \
  > $OUT/san-memcheck.txt 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' $OUT/san-memcheck.txt)"
SQ=4096x4096x4096,8192x8192x8192
MID=2504x1744x1768,2680x1336x1728,1920x1384x1424
NEW16=3176x1208x2216,1304x2872x1592,2216x2216x1100,1160x3592x3000,6144x1056x2048
NEWF=3456x2304x1800,1900x1900x1900,6200x3100x1200
for r in 1 2 3; do
  timeout 150 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes $SQ >> $OUT/squares.txt 2>&1
  timeout 60 /tmp/bgc-new --dtypes bf16,fp16 --shapes $MID,$NEW16 >> $OUT/mid.txt 2>&1
  timeout 60 /tmp/bgc-new --dtypes fp32,tf32 --shapes $NEWF >> $OUT/fp32.txt 2>&1
  echo "round $r at $SECONDS s"
done
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {k=$1" "$2; v[k]=v[k]" "$8} END{for(k in v) print k, v[k]}' \
  $OUT/squares.txt $OUT/mid.txt $OUT/fp32.txt | sort

#!/bin/bash
# At 8f97369: every GPU and cuda test, then the issue's headline shapes beside cuBLAS
# (bf16/fp16 squares and the class's long-K shapes, tf32 and fp32 4096^3), one round.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
(scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || echo "bench build FAILED") &
GPU_TESTS_TIMEOUT=300 CUDA_TESTS_TIMEOUT=300 DEB=$HERE/../../.deb OUT=$OUT STEPS=tests bash scripts/device_check.sh > /dev/null
wait
cat $OUT/summary.txt
grep -E "^\[  FAILED" $OUT/gpu-tests.txt $OUT/cuda-tests.txt | head
echo "tests at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
/tmp/bgc-cur --dtypes bf16,fp16 --shapes 4096x4096x4096,8192x8192x8192,1184x3304x2504,3352x5768x4296,16x4096x4096,1536x1536x6144 > $OUT/bench.txt 2>&1
/tmp/bgc-cur --dtypes tf32,fp32 --shapes 4096x4096x4096 >> $OUT/bench.txt 2>&1
grep -E "^(bf16|fp16|tf32|fp32) " $OUT/bench.txt | awk '{print $1, $2, $8}'
echo "done at $SECONDS s"

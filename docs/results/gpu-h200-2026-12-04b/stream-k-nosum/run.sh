#!/bin/bash
# Is stream-K's slowness its sum? The committed stream-K kernel (cur) against one
# without the sum of shared tiles (nosum: no spills; its output is wrong wherever
# groups share a tile), and the default plan, at 2048^3 (no tile shared: every
# group runs one whole tile) and 4096^3, bf16, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 &
scripts/device_bench_gemm.sh $HERE/../nosum nosum > /tmp/b-nosum.log 2>&1 &
wait
ls /tmp/bgc-cur /tmp/bgc-nosum || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
for r in 1 2; do
  /tmp/bgc-cur --dtypes bf16 --shapes 2048x2048x2048,4096x4096x4096,1024x5000x3000
  /tmp/bgc-cur --dtypes bf16 --shapes 2048x2048x2048,4096x4096x4096,1024x5000x3000 --plan stream_k
  /tmp/bgc-nosum --dtypes bf16 --shapes 2048x2048x2048,4096x4096x4096,1024x5000x3000 --plan stream_k
done > $OUT/raw.txt 2>&1
grep -E "^bf16" $OUT/raw.txt
echo "done at $SECONDS s"

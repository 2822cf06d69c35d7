#!/bin/bash
# Sixty-fourth session, third call (asked for an H200, ran on an H100): fp32 at the
# squares the bars name, and mid shapes,
# on the tree with the fma atom's 32-bit shared reads (the committed rule), three
# rounds, device time. No carry.
cd "$(dirname "$0")/../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { tail -20 /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
for r in 1 2 3; do
  timeout 100 /tmp/bgc-new --dtypes fp32 --shapes 4096x4096x4096,8192x8192x8192,2048x2048x2048,1000x1000x1000,3000x2000x1500 >> $OUT/fp32.txt 2>&1
  echo "round $r at $SECONDS s"
done
awk '$1 == "fp32" {v[$2]=v[$2]" "$8} END{for(k in v) print k, v[k]}' $OUT/fp32.txt | sort

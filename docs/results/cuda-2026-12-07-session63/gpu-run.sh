#!/bin/bash
# Sixty-third session: no GPU code changed since the fifty-fourth session's final tree;
# the squares the bars name and the worst shapes with every dimension >= 1024, three
# rounds each, on whatever card the call gets (machine.txt). No carry needed.
cd "$(dirname "$0")/../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 || { tail -20 /tmp/bbuild.log; exit 1; }
echo "built at $SECONDS s"
for r in 1 2 3; do
  timeout 150 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes 4096x4096x4096,8192x8192x8192 >> $OUT/squares.txt 2>&1
  timeout 60 /tmp/bgc-new --dtypes bf16,fp16 --shapes 2504x1744x1768,2680x1336x1728,1920x1384x1424 >> $OUT/mid.txt 2>&1
  echo "round $r at $SECONDS s"
done
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {k=$1" "$2; v[k]=v[k]" "$8} END{for(k in v) print k, v[k]}' \
  $OUT/squares.txt $OUT/mid.txt | sort

#!/bin/bash
# Seventy-first session, second call: eight 16-bit shapes with every dimension >= 1024
# drawn this session (seed 7114, multiples of 8), two rounds, and small shapes up to
# 256^3 in every dtype (the host-wall bar: tessel's `host` column against cuBLAS's).
# No build of the tests: the first call ran them on the same code. carry [".deb"].
cd "$(dirname "$0")/../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bnew.log 2>&1 || { tail -20 /tmp/bnew.log; exit 1; }
echo "built at $SECONDS s"
NEW16=2928x4936x2384,4080x1632x1864,2224x2160x3000,4064x2520x5776,5528x1904x2920,2920x1528x1976,4288x3672x4456,1880x4544x3968
SMALL=64x64x64,128x128x128,200x300x400,256x256x256,96x160x224
for r in 1 2; do
  timeout 120 /tmp/bgc-new --dtypes bf16,fp16 --shapes $NEW16 >> $OUT/new16.txt 2>&1
  echo "round $r at $SECONDS s"
done
timeout 150 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes $SMALL > $OUT/small.txt 2>&1
echo "small at $SECONDS s"
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {k=$1" "$2; v[k]=v[k]" "$8} END{for(k in v) print k, v[k]}' $OUT/new16.txt | sort
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {print $1, $2, "tessel host", $3, "cublas host", $4}' $OUT/small.txt

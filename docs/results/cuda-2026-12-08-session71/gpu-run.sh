#!/bin/bash
# Seventy-first session: the bars on whatever card the call gets (machine.txt), and the
# shapes under 0.75 with plan variants beside their default. No cuda code changed since
# the sixty-fifth session; PreparedGemm::run changed (its cpu path). carry [".deb"].
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
SQ=4096x4096x4096,8192x8192x8192
LOW16=4104x1224x1096,1096x5000x1480,1544x3064x2232,2504x1744x1768,2680x1336x1728,1304x2872x1592,1928x4816x1888,1680x3768x3656,1800x2944x1896,1824x3208x3272
timeout 120 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes $SQ >> $OUT/squares.txt 2>&1
timeout 60 /tmp/bgc-new --dtypes bf16 --shapes $LOW16 >> $OUT/low16.txt 2>&1
echo "bars at $SECONDS s"
timeout $((570 - SECONDS)) /tmp/bgc-new --dtypes bf16 --shapes $LOW16 --plan cluster=1 --plan cluster=2 \
  --plan tile=128x256x64,workers=2,cluster=2 --plan tile=192x128x64,workers=3,cluster=2 \
  --plan tile=128x192x64,workers=2,cluster=2 > $OUT/variants.txt 2>&1
echo "variants rc=$? at $SECONDS s"
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {k=$1" "$2; v[k]=v[k]" "$8} END{for(k in v) print k, v[k]}' \
  $OUT/squares.txt $OUT/low16.txt | sort

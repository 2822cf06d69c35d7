#!/bin/bash
# Sixty-ninth session: the bars on whatever card the call gets (machine.txt); no cuda
# code changed since the sixty-fifth session. carry [".deb"].
# Checks: the cuda/gpu tests (the wgmma window sweep left out). Bench: two rounds of the
# squares the bars name, and 16-bit shapes with every dimension >= 1024: eight drawn
# this session (seed 6914) and the eleven earlier sessions left under 0.75.
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
NEW16=5104x4760x1936,3896x5352x3920,1368x1536x1576,3560x1984x2176,5320x1720x2592,1192x6016x5504,1496x4088x4208,4160x3184x1416
LOW16=4104x1224x1096,1096x5000x1480,1544x3064x2232,2504x1744x1768,2680x1336x1728,1304x2872x1592,1160x3592x3000,1928x4816x1888,1680x3768x3656,1800x2944x1896,1824x3208x3272
for r in 1 2; do
  timeout 150 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes $SQ >> $OUT/squares.txt 2>&1
  timeout 90 /tmp/bgc-new --dtypes bf16,fp16 --shapes $NEW16 >> $OUT/new16.txt 2>&1
  timeout 90 /tmp/bgc-new --dtypes bf16 --shapes $LOW16 >> $OUT/low16.txt 2>&1
  echo "round $r at $SECONDS s"
done
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {k=$1" "$2; v[k]=v[k]" "$8} END{for(k in v) print k, v[k]}' \
  $OUT/squares.txt $OUT/new16.txt $OUT/low16.txt | sort

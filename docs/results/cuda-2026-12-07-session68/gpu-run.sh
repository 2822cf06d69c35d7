#!/bin/bash
# Sixty-eighth session: the bars on whatever card the call gets (machine.txt); no cuda
# code changed since the sixty-fifth session. carry [".deb"].
# Checks: the cuda/gpu tests (the wgmma window sweep left out). Bench: two rounds of the
# squares the bars name, and 16-bit shapes with every dimension >= 1024: eight drawn
# this session (seed 6814) and the nine earlier sessions left under 0.75.
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
NEW16=4760x2944x5672,4240x5288x5744,4856x2360x3640,2888x2144x4648,1800x2944x1896,1240x2944x5184,4000x5208x3656,1824x3208x3272
LOW16=4104x1224x1096,1096x5000x1480,1544x3064x2232,2504x1744x1768,2680x1336x1728,1304x2872x1592,1160x3592x3000,1928x4816x1888,1680x3768x3656
for r in 1 2; do
  timeout 150 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes $SQ >> $OUT/squares.txt 2>&1
  timeout 90 /tmp/bgc-new --dtypes bf16,fp16 --shapes $NEW16 >> $OUT/new16.txt 2>&1
  timeout 90 /tmp/bgc-new --dtypes bf16 --shapes $LOW16 >> $OUT/low16.txt 2>&1
  echo "round $r at $SECONDS s"
done
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {k=$1" "$2; v[k]=v[k]" "$8} END{for(k in v) print k, v[k]}' \
  $OUT/squares.txt $OUT/new16.txt $OUT/low16.txt | sort

#!/bin/bash
# Sixty-sixth session: the bars on whatever card the call gets (machine.txt); no cuda
# code changed since the sixty-fifth session. carry [".deb"].
# Checks: the cuda/gpu tests (the wgmma window sweep left out). Bench: two rounds of the
# squares the bars name, 16-bit shapes with every dimension >= 1024 that no earlier
# session measured, and fp32/tf32 shapes of each class. Cold compiles on this machine's
# CPU (NVRTC, an empty cache each, TESSEL_PASS_TIMING).
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
for spec in "fp32 4096 4096 4096" "tf32 4096 4096 4096" "bf16 4096 4096 4096" "fp32 1000 1000 1000"; do
  set -- $spec
  for i in 1 2; do
    d=$(mktemp -d)
    TESSEL_CACHE_DIR=$d TESSEL_PASS_TIMING=1 build-dev/tessel explain $2 $3 $4 --target cuda --dtype $1 --arch sm_90a 2>&1 |
      grep "tessel: nvrtc" | sed "s/^/$1 $2x$3x$4: /"
    rm -rf "$d"
  done
done > $OUT/cold-compile.txt 2>&1
cat $OUT/cold-compile.txt
SQ=4096x4096x4096,8192x8192x8192
NEW16=2952x1432x1640,1544x3064x2232,4104x1224x1096,2360x2360x2360,1096x5000x1480
NEWF=2600x3400x1700,5000x1100x2100,1300x1300x4500
for r in 1 2; do
  timeout 150 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes $SQ >> $OUT/squares.txt 2>&1
  timeout 60 /tmp/bgc-new --dtypes bf16,fp16 --shapes $NEW16 >> $OUT/mid.txt 2>&1
  timeout 60 /tmp/bgc-new --dtypes fp32,tf32 --shapes $NEWF >> $OUT/fp32.txt 2>&1
  echo "round $r at $SECONDS s"
done
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {k=$1" "$2; v[k]=v[k]" "$8} END{for(k in v) print k, v[k]}' \
  $OUT/squares.txt $OUT/mid.txt $OUT/fp32.txt | sort

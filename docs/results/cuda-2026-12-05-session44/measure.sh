#!/bin/bash
# Cold NVRTC compiles of the default cuda GEMM kernels (no GPU needed): the median of
# three, each in a fresh process with an empty kernel cache. Usage: [BETA=B] measure.sh TESSEL
# (BETA: the kernel a call with that beta compiles; without it, tessel explain's default, 0)
T=${1:-build/tessel}
while read -r dtype m n k extra; do
  for i in 1 2 3; do
    d=$(mktemp -d)
    TESSEL_CACHE_DIR=$d TESSEL_PASS_TIMING=1 $T explain $m $n $k --target cuda --dtype $dtype --arch sm_90a ${BETA:+--beta $BETA} $extra 2>&1 |
      grep "tessel: nvrtc" | sed 's/.*nvrtc *//'
    rm -rf "$d"
  done | sort -n | sed -n 2p | sed "s/^/$dtype ${m}x${n}x${k} ${extra:-default}: /"
done <<'SHAPES'
bf16 4096 4096 4096
bf16 4096 4096 4096 --persistent 132 --tile-band 8
fp16 2049 1023 257
tf32 4096 4096 4096
bf16 1000 1000 1001
bf16 3000 2000 1500
fp32 4096 4096 4096
fp32 1000 1000 1000
SHAPES

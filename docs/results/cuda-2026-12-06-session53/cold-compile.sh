#!/bin/bash
# Cold compiles (NVRTC on this CPU machine, an empty cache each time) of the kernel
# before (BASE, the build of 3ccb9a7) and after the aligned variant (NEW), two runs
# each: `bash cold-compile.sh /tmp/tessel-base build/tessel > cold-compile.txt`.
BASE=$1 NEW=$2
for s in "64 64 64 --dtype fp32" "127 193 61 --dtype fp32" "1000 1000 1000 --dtype fp32" \
         "3000 2000 1500 --dtype fp32" "4096 4096 4096 --dtype fp32 --beta 0" "200 300 400 --dtype bf16" \
         "256 256 256 --dtype fp16" "1000 1000 1000 --dtype bf16" "512 512 512 --dtype tf32"; do
  for b in "$BASE" "$NEW"; do for run in 1 2; do
    echo "$s | $([ "$b" = "$BASE" ] && echo before || echo after) | $(TESSEL_PASS_TIMING=1 TESSEL_CACHE_DIR=$(mktemp -d) \
      $b explain $s --target cuda --arch sm_90a 2>&1 | grep -E 'tessel: nvrtc|Used [0-9]+ reg' |
      sed -e 's/tessel: nvrtc *//' -e 's/ptxas info *: Used \([0-9]*\) registers.*/\1 registers/' | tr '\n' ' ')"
  done; done
done

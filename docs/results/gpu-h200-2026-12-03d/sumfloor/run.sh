#!/bin/bash
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90a sumfloor.cu -o /tmp/sf || exit 1
/tmp/sf | tee $OUT/sumfloor.txt
REPS=1 timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum /tmp/sf > $OUT/sumfloor-ncu.txt 2>&1
grep -E '^  [a-z_]+|gpu__time' $OUT/sumfloor-ncu.txt | paste - - | awk '{print $1, $NF}' | head -80

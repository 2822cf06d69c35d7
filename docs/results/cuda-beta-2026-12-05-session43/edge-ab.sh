#!/bin/bash
# The forty-second session's rolled edge forms, A/B with beta 0: .snap/old holds
# `git archive 4ace2b7 ...` (its bench has no --beta: beta 0 always), this tree is new.
# Two rounds, old and new alternating; carry [".snap"].
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 & bash scripts/device_bench_gemm.sh .snap/old old >> $OUT/bbuild.log 2>&1; wait
echo "built at $SECONDS s"
S=4096x4096x4096,2049x1023x257,3000x2000x1500,1537x2050x1000,1000x1000x1001,2050x1030x1000
for r in 1 2; do for b in old new; do
  TESSEL_CACHE_DIR=/tmp/c-$b timeout 100 /tmp/bgc-$b --dtypes bf16,tf32 --shapes $S > $OUT/edge-$b-$r.txt 2>&1
  echo "$b round $r rc=$?: $(tail -n +3 $OUT/edge-$b-$r.txt | awk '{print $1, $2, $8}' | paste -sd' ')"
done; done

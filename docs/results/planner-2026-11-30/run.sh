#!/bin/sh
# The planner's held-out regret on the cpu target (docs/planner.md). Run from the
# repository root with a built CLI in $BUILD (default build). One thread per launch:
# this machine is shared (2 cores, load 5-9 while it ran), and a 2-thread launch
# waits for its slower thread.
set -e
BUILD=${BUILD:-build}
TESSEL=${TESSEL:-$BUILD/tessel}
D=${D:-docs/results/planner-2026-11-30}  # another directory for a rerun (planner-2026-12-01-cpu)
for k in gemm_nt softmax; do
  case $k in gemm_nt) R=16:512 ;; softmax) R=16:2048 ;; esac
  # Calibration: 24 shapes drawn with seed 1; each: the fallback model's top 3, the
  # default plan and 8 random legal candidates, 5 paired rounds.
  $TESSEL tune kernels/$k.tir --calibrate --draws 24 --per-shape 8 --seed 1 --range $R \
      --threads 1 --flush-denormals --out $D/calibration-$k-cpu-t1.txt > $D/calibrate-$k.log 2>/dev/null
  # Held out: 50 shapes drawn with seed 2 (never seen by the fit); each: the model's
  # top 4, the default plan and 2 random legal candidates, 9 paired rounds, 3 trials (src/plan/measure.h)

  $TESSEL tune kernels/$k.tir --heldout 50 --seed 2 --range $R --top 4 --extra 2 --rounds 9 \
      --threads 1 --flush-denormals --calibration $D/calibration-$k-cpu-t1.txt --out $D > $D/heldout-$k.log 2>/dev/null
done
# The dispatcher against fixed plans (fixed/fixed-*.txt: the most frequent winners of
# the runs above, so chosen after seeing them): the same 50 held-out shapes, each fixed
# plan measured on every shape beside the candidates.
for k in gemm_nt softmax; do
  case $k in gemm_nt) R=16:512 ;; softmax) R=16:2048 ;; esac
  $TESSEL tune kernels/$k.tir --heldout 50 --seed 2 --range $R --top 4 --extra 2 --rounds 9 \
      --threads 1 --flush-denormals --calibration $D/calibration-$k-cpu-t1.txt \
      --fixed-plans $D/fixed/fixed-$k.txt --out $D/fixed > $D/fixed/heldout-$k.log 2>/dev/null
done

#!/bin/bash
# The planner's held-out regret on the cpu target (issue 16; docs/planner.md), here, one
# thread a launch (a 2-thread launch waits for its slower thread on this shared machine).
# For gemm_nt (kernels/gemm_nt.tir: B stored transposed) and softmax (kernels/softmax.tir):
#   1. calibration: `tessel tune --calibrate` on DRAWS shapes (48) drawn with seed
#      CAL_SEED (1), each the guide's top 3 (the fallback model on the first half, then a
#      fit of the runs so far), the default plan and 8 random legal candidates:
#      $OUT/calibration-<kernel>-cpu-t1.txt (+ .samples.json). Up to seed 5 the runs
#      drew 24; on seed 5 the GEMM's small shapes, few among them, held its worst picks
#      (docs/planner.md);
#   2. held-out: 50 shapes drawn with seed HELDOUT_SEED (6; the first runs used 2 and
#      the sixteenth session's 3 to 5, whose shapes then guided the model (ew_elems_l2's
#      threshold was chosen on seeds 2 and 3, ew_elems_odd's vector rule on 2 to 4, the
#      48 draws on 5): a new seed keeps the check honest), never seen by
#      the fit; per shape the model's top 4, the default plan, 2 random legal candidates
#      and the fixed plans of FIXED_DIR/fixed-<kernel>.txt (the six most frequent winners
#      of the ninth session's run, chosen after seeing them), each checked against the
#      FP64 evaluator and timed (9 paired rounds, least of 3 trials): regret = time(pick)
#      / time(best measured), median / p90 / max, Kendall's tau, suite totals beside each
#      fixed plan's; $OUT/heldout-<kernel>.json (with the command), the log beside it.
# Sizes log-uniform integers (ragged): gemm_nt's M, N, K in [16, 512], softmax's M, N in
# [16, 2048]. `--flush-denormals`: softmax's exponentials of large negative numbers are
# denormal, 10x slower on this cpu, and a shape's time then depends on its random data.
# About 4 minutes on 2 cores; the load average goes in $OUT/load.txt (a shared machine:
# the ninth session's run under load 6-10 had 3-10x outliers that a quiet rerun lost).
#   OUT=docs/results/planner-DATE-cpu scripts/planner_cpu.sh
set -eo pipefail
cd "$(dirname "$0")/.."
TESSEL=${TESSEL:-build/tessel}
OUT=${OUT:-/tmp/tessel-out/planner-cpu}
CAL_SEED=${CAL_SEED:-1}
HELDOUT_SEED=${HELDOUT_SEED:-6}
DRAWS=${DRAWS:-48}
FIXED_DIR=${FIXED_DIR-docs/results/planner-2026-12-01-session11/fixed}
mkdir -p "$OUT"
echo "start $(date -u +%FT%TZ): $(cat /proc/loadavg)" > "$OUT/load.txt"
for k in gemm_nt softmax; do
  case $k in gemm_nt) range=16:512 ;; softmax) range=16:2048 ;; esac
  common=(--threads 1 --flush-denormals --range "$range")
  echo "== calibrate $k"
  "$TESSEL" tune kernels/$k.tir --calibrate --draws "$DRAWS" --per-shape 8 --seed "$CAL_SEED" "${common[@]}" \
    --out "$OUT/calibration-$k-cpu-t1.txt" > "$OUT/calibrate-$k.log"
  fixed=()
  [ -n "$FIXED_DIR" ] && fixed=(--fixed-plans "$FIXED_DIR/fixed-$k.txt")
  echo "== held-out $k"
  "$TESSEL" tune kernels/$k.tir --heldout 50 --seed "$HELDOUT_SEED" --top 4 --extra 2 --rounds 9 "${common[@]}" \
    --calibration "$OUT/calibration-$k-cpu-t1.txt" "${fixed[@]}" --out "$OUT" > "$OUT/heldout-$k.log"
  echo "after $k $(date -u +%FT%TZ): $(cat /proc/loadavg)" >> "$OUT/load.txt"
  grep -A16 "held-out shapes in" "$OUT/heldout-$k.log"
done

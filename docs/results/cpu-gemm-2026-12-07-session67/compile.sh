#!/bin/bash
# Cold compiles (an empty cache each, TESSEL_PASS_TIMING's cpu-c++ part, the least of
# three runs) of the session's start (BASE) and the tree (NEW) on the same shapes.
BASE=${BASE:-/tmp/tessel-base} NEW=${NEW:-build/tessel}
for s in "28 12 11" "21 10 110" "16 12 11" "39 12 11" "34 9 189" "137 10 30" "250 9 423" "64 64 64"; do
  printf "%-10s" "${s// /x}"
  for t in $BASE $NEW; do
    for i in 1 2 3; do
      TESSEL_CACHE_DIR=$(mktemp -d) TESSEL_PASS_TIMING=1 $t gemm $s --target cpu 2>&1 | awk '/cpu-c\+\+/ {print $3}'
    done | sort -n | head -1 | awk '{printf " %8.1f ms", $1}'
  done
  echo
done

#!/bin/bash
# Cold compiles (an empty cache each, TESSEL_PASS_TIMING's cpu-c++ part, the least of
# three runs) of the session's start (BASE) and the tree (NEW) on the shapes given:
#   compile.sh 4x4x4 16x12x11 ...
BASE=${BASE:-/tmp/tessel-base} NEW=${NEW:-build/tessel}
for s in "$@"; do
  printf "%-10s" "$s"
  for t in $BASE $NEW; do
    for i in 1 2 3; do
      D=$(mktemp -d); TESSEL_CACHE_DIR=$D TESSEL_PASS_TIMING=1 $t gemm ${s//x/ } --target cpu 2>&1 | awk '/cpu-c\+\+/ {print $3}'; rm -rf $D
    done | sort -n | head -1 | awk '{printf " %8.1f ms", $1}'
  done
  echo
done

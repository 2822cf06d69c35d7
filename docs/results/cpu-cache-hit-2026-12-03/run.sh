#!/bin/bash
# A disk-cache hit of the cpu target in a fresh process, before and after the
# request entries: hit.cpp times one tessel::compile() of a 256^3 fp32 GEMM
# (kernel capture and plan choice before the clock starts). Each binary's first
# run fills the cache; then three rounds, each 21 fresh processes per tree
# (median), the trees alternating.
#   OLD_TREE: a checkout of the tree before (ad6780c) with build/libtessel.a built
#   (cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo; ninja -C build tessel).
set -e
cd "$(dirname "$0")/../../.."
build() {
  (cd "$1" && g++ -std=c++20 -O2 -Isrc -Iinclude -Ibuild/include "$OLDPWD/docs/results/cpu-cache-hit-2026-12-03/hit.cpp" \
     build/libtessel.a -L/usr/local/cuda/lib64 -lnvrtc -lcuda -ldl -lpthread -o "$2")
  "$2" > /dev/null
}
build "$OLD_TREE" /tmp/tessel-hit-old
build . /tmp/tessel-hit-new
for round in 1 2 3; do
  for tree in old new; do
    for i in $(seq 1 21); do /tmp/tessel-hit-$tree; done | sort -n |
      awk -v r=$round -v t=$tree '{a[NR]=$1} END {printf "round %d %s: median %d us, min %d, max %d\n", r, t, a[11], a[1], a[NR]}'
  done
done

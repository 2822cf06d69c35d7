#!/bin/bash
# From the repository root: the harness beside the built-in kernel, A prefetched 64,
# 128 and 256 floats ahead, k blocks of 500, 1000 and K (three rounds each).
set -e
H=docs/results/cpu-gemm-2026-12-07-session63/harness
T=$(mktemp -d)
n=$(grep -n "void tsl_ukr_6x64_s_s" src/target/cpu/cpu_microkernel_prebuilt.inc | tail -1 | cut -d: -f1)
awk -v n=$n 'NR>=n' src/target/cpu/cpu_microkernel_prebuilt.inc | awk '{print} /^}$/{exit}' > $T/k6x64.inc
(cd $T && python3 $OLDPWD/$H/make_k.py)
for d in 64 128 256; do
  g++ -O2 -march=x86-64-v4 -mprefer-vector-width=512 -DPFD=$d -I$T $H/h.cpp -o $T/h$d
  for s in "4000 64 5000" "4000 128 3000" "3000 256 2000"; do echo "PFD $d, $s"; $T/h$d $s; done
done

#!/bin/bash
# unit-compile.sh FILE.cpp [more flags]: the median of 11 compiles of one emitted unit
# with the JIT's command (AVX-512 flags as cpu_isa.cpp and cpu_jit.cpp give them), in ms.
f=$1; shift
F="-march=x86-64-v4 -mtune=native -mprefer-vector-width=512 -O2 -ffp-contract=fast -fno-math-errno -fno-tree-loop-distribute-patterns -fPIC -shared -pipe -nostdlib"
ts=()
for i in $(seq 11); do
  s=$(date +%s%N); c++ $F "$@" -o /tmp/unit-compile.so "$f" -lgcc || exit 1; e=$(date +%s%N)
  ts+=($(( (e-s)/100000 )))
done
printf "%s\n" "${ts[@]}" | sort -n | sed -n 6p | awk -v f="$f" '{printf "%s: %.1f ms\n", f, $1/10}'

#!/bin/bash
# usage: ab_l2.sh THREADS REPS SHAPES...  prints per shape the median-of-reps of each side's min, ms
t=$1; reps=$2; shift 2
for s in "$@"; do
  a=(); b=()
  for rep in $(seq $reps); do for l2 in 2097152 1048576; do
    v=$(TESSEL_EXP_L2=$l2 /work/main/build/bench_gemm_call --threads $t --rounds 3 --calls 3 $s | grep -o "prepared [0-9]* ([0-9]*)" | head -1 | tr -d '()' | awk '{printf "%.3f", $3/1e6}')
    if [ $l2 = 2097152 ]; then a+=($v); else b+=($v); fi
  done; done
  ma=$(printf "%s\n" "${a[@]}" | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')
  mb=$(printf "%s\n" "${b[@]}" | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')
  echo "$s t$t: 2MiB ${a[*]} | 1MiB ${b[*]} | medians $ma $mb ratio(2M/1M) $(awk "BEGIN{printf \"%.3f\", $ma/$mb}")"
done

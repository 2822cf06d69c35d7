#!/bin/bash
# group_calls.sh OLD_TESSEL NEW_TESSEL BETA MxNxK...: emits each shape's unit with both
# builds (`tessel explain ... --target cpu`), compiles them with the JIT's flags, and
# times their tessel_group in turn with group_calls (built as group_calls.cpp says, in
# the repository root): two lines for each build, ns a call.
F="-march=x86-64-v4 -mtune=native -mprefer-vector-width=512 -O2 -ffp-contract=fast -fno-math-errno"
F="$F -fno-tree-loop-distribute-patterns -fPIC -shared"
old=$1 new=$2 beta=$3; shift 3
for s in "$@"; do
  IFS=x read m n k <<< "$s"
  for t in old new; do
    ${!t} explain $m $n $k --target cpu 2>&1 | sed -n '/---- cpu (emitted C++) ----/,$p' | sed -n '2,$p' > /tmp/unit_$t.cpp
    g++ $F -Wno-unused /tmp/unit_$t.cpp -o /tmp/$t-$s.so
  done
  echo "$s beta $beta"; ./group_calls $m $n $k $beta /tmp/old-$s.so /tmp/new-$s.so /tmp/old-$s.so /tmp/new-$s.so
done

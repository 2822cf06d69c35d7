#!/bin/bash
# Fifty-second session, fifth call: the rule that gives ragged fp32 products under
# K = 2048 the 128x128 tiles (kFmaWideRaggedMinK, src/ops/gemm.cpp), on shapes the
# rule was not fitted to: .snap/old (52ca30e, before the rule) against this tree,
# three alternating rounds, beta 0; 2048x4096x1536 and 5000x3000x2500 keep their
# plan. Then the fp32 tile tests. One `run` call, carry [".deb", ".snap"].
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu || exit 1
wait
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
S=3500x4500x1000,2200x5000x1800,5500x3500x700,4500x4500x900,2600x2600x1900,4000x3000x600,6000x5000x1000,2048x4096x1536,5000x3000x2500
for round in 1 2 3; do for b in old new; do
  [ $SECONDS -gt 400 ] && break 2
  echo "== round $round $b" >> $OUT/rule.txt
  timeout 60 /tmp/bgc-$b --dtypes fp32 --shapes $S >> $OUT/rule.txt 2>&1
done; done
echo "== fp32, cuBLAS time / tessel time (device): round impl: shape ratio ..."
awk '/^== /{r=$0; next} $1=="fp32" {print r, $2, $8}' $OUT/rule.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s %s", $3, $4} END {print ""}'
(cd build-dev && timeout 150 ctest -R 'DeepFp32|Fp32Wide|FmaAtom' -j2 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$?"; grep -E "tests passed|tests failed|\*\*\*" $OUT/tests.log | tail -6

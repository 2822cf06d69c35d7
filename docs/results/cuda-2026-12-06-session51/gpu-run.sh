#!/bin/bash
# Fifty-first session: the fp32 (fma atom) 256-row tiles compile the beta-0 kernel
# (plan_beta_form, src/ops/gemm.cpp). One `run` call, carry [".deb", ".snap"]:
# builds bench_gemm_cuda from .snap/old (071f8ff, before the change) and from this
# tree, and this tree's GPU tests; runs the cuda/gpu tests but the wgmma window sweep
# (no wgmma code changed), then fp32 old and new in alternating rounds, beta 0.
cd "$(dirname "$0")/../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
S=4096x4096x4096,8192x8192x8192,6000x4000x3000,2048x2048x2048,3000x2000x1500
for round in 1 2 3 4; do for b in old new; do
  [ $SECONDS -gt 545 ] && break 2
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 45 /tmp/bgc-$b --dtypes fp32 --shapes $S >> $OUT/ab.txt 2>&1
done; done
echo "== fp32, cuBLAS time / tessel time (device): round impl: shape ratio ..."
awk '/^== /{r=$0; next} $1=="fp32" {print r, $2, $8}' $OUT/ab.txt | sed 's/== round //' |
  awk '{k=$1" "$2; if (k!=p) {if (p!="") printf "\n"; printf "%s:", k; p=k} printf " %s %s", $3, $4} END {print ""}'

#!/bin/bash
# Forty-fourth session, third call: every cuda/gpu test on this tree (the second
# call's ctest ran past its 200 s), then fp32 and bf16 with beta 0, .snap/old
# (2d37c54) beside this tree, two alternating rounds. One `run` call, carry
# [".deb", ".snap"]. Few output files: the tool returns at most eight.
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
JS=$(dirname "$(find /tmp/gt -name nlohmann_jsonConfig.cmake | head -1)")
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > /tmp/bbuild.log 2>&1 &
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -Dnlohmann_json_DIR="$JS" \
    -DCMAKE_PREFIX_PATH=/tmp/gt/usr -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 250 ninja -C build-dev -j12 test_gpu test_cuda tessel_cli; } > /tmp/build.log 2>&1 || { grep -E -A3 "error|FAILED" /tmp/build.log | head -40; exit 1; }
wait
echo "built at $SECONDS s"; tail -2 /tmp/bbuild.log
(cd build-dev && timeout 320 ctest -L 'cuda|gpu' -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
S=4096x4096x4096,3000x2000x1500,1672x2744x3488,1000x1000x1000,2000x3000x1200
for round in 1 2; do for b in old new; do
  [ $SECONDS -gt 540 ] && break 2
  echo "== round $round $b" >> $OUT/ab.txt
  timeout 40 /tmp/bgc-$b --dtypes fp32,bf16 --shapes $S >> $OUT/ab.txt 2>&1
done; done
awk '/^== /{r=$0; next} $1=="fp32"||$1=="bf16" {print r, $1, $2, $8}' $OUT/ab.txt | paste -sd' ' | sed 's/== /\n/g'

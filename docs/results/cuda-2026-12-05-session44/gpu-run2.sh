#!/bin/bash
# Forty-fourth session, second call: the kernel for the call's beta (GemmBeta) and
# the accumulator scaled in place through the stage. Every cuda/gpu test on this
# tree, compute-sanitizer over the small tma tests, then .snap/old (2d37c54, one
# kernel for every beta) beside this tree with beta 0 and 1, alternating.
# One `run` call, carry [".deb", ".snap"].
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
JS=$(dirname "$(find /tmp/gt -name nlohmann_jsonConfig.cmake | head -1)")
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new & bash scripts/device_bench_gemm.sh .snap/old old & wait) > $OUT/bbuild.log 2>&1 &
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -Dnlohmann_json_DIR="$JS" \
    -DCMAKE_PREFIX_PATH=/tmp/gt/usr -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 250 ninja -C build-dev -j12 test_gpu test_cuda tessel_cli; } > "$OUT/build.log" 2>&1 || { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
wait
echo "built at $SECONDS s"; tail -2 $OUT/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
S=4096x4096x4096,8192x8192x8192,2049x1023x257,3000x2000x1500,1000x1000x1000,1672x2744x3488
for beta in 0 1; do for b in old new; do
  timeout 60 /tmp/bgc-$b --dtypes bf16,tf32,fp32 --shapes $S --beta $beta > $OUT/bench-$b-beta$beta.txt 2>&1
  echo "$b beta=$beta rc=$? at $SECONDS s"
done; done
for b in old new; do for beta in 0 1; do echo "== $b beta $beta (dtype shape dev-x)"; tail -n +3 $OUT/bench-$b-beta$beta.txt | awk '{print $1, $2, $8}' | paste -sd' ' ; done; done
F='TmaGpu.*:TmaPipelineGpu.SmallShapes*:TmaPipelineGpu.Positions*'
for tool in memcheck racecheck synccheck; do
  [ $SECONDS -gt 470 ] && { echo "no time for $tool"; break; }
  (cd build-dev && timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 ./test_cuda --gtest_filter="$F") > $OUT/san-$tool.txt 2>&1
  echo "$tool rc=$? at $SECONDS s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' $OUT/san-$tool.txt | tr '\n' ' ')"
done

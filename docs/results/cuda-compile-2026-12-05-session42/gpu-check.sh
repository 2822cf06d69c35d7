#!/bin/bash
# wgmma epilogues through the stage, rolled (cuda_emit.cpp emit_staged_loop): every
# cuda/gpu test, then old (.snap/old, the commit before) beside new with beta 0 and 1,
# then cold compiles; one call
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
JS=$(dirname "$(find /tmp/gt -name nlohmann_jsonConfig.cmake | head -1)")
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt
(bash scripts/device_bench_gemm.sh . new && bash scripts/device_bench_gemm.sh .snap/old old) > $OUT/bbuild.log 2>&1 &
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -Dnlohmann_json_DIR="$JS" \
    -DCMAKE_PREFIX_PATH=/tmp/gt/usr -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 250 ninja -C build-dev -j12 test_gpu test_cuda tessel_cli; } > "$OUT/build.log" 2>&1 || { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
wait
echo "built at $SECONDS s"; tail -2 $OUT/bbuild.log
(cd build-dev && timeout 230 ctest -L 'cuda|gpu' -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | tail -12
S=4096x4096x4096,2049x1023x257,3000x2000x1500,5000x3000x2500,1537x2050x1000
for beta in 0 1; do for b in old new; do
  timeout 70 /tmp/bgc-$b --dtypes bf16 --shapes $S --beta $beta > $OUT/bench-$b-beta$beta.txt 2>&1
  echo "$b beta=$beta rc=$? at $SECONDS s"
done; done
for d in bf16 tf32; do rm -rf /tmp/cc; TESSEL_CACHE_DIR=/tmp/cc TESSEL_PASS_TIMING=1 build-dev/tessel explain 4096 4096 4096 \
  --target cuda --dtype $d 2>&1 | grep "tessel: nvrtc" | sed "s/^/$d 4096^3 /"; done
for b in old new; do for beta in 0 1; do echo "== $b beta $beta"; tail -n +3 $OUT/bench-$b-beta$beta.txt | awk '{print $2, $8, $9, $10}'; done; done

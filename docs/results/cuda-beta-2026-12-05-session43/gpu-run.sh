#!/bin/bash
# C = A B + beta C through the stage (cuda_emit.cpp, staged_run): every cuda/gpu
# test, then the commit before (.snap/old) beside this tree with beta 0 and 1, then
# a bar check on shapes no issue lists; one `run` call, carry [".deb", ".snap"]
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
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
S=4096x4096x4096,8192x8192x8192,2049x1023x257,3000x2000x1500,5000x3000x2500,1537x2050x1000,1000x1000x1000
for beta in 1 0; do for b in old new; do
  timeout 80 /tmp/bgc-$b --dtypes bf16,fp16,tf32 --shapes $S --beta $beta > $OUT/bench-$b-beta$beta.txt 2>&1
  echo "$b beta=$beta rc=$? at $SECONDS s"
done; done
timeout 60 /tmp/bgc-new --dtypes fp32 --shapes 4096x4096x4096,3000x2000x1500 --beta 1 > $OUT/bench-new-fp32-beta1.txt 2>&1
B=1140x4364x1208,4240x5664x1892,5580x1644x3152,5552x4312x4224,3752x3808x1376,3308x3692x5720,5220x4144x4960,1764x5648x5132
timeout 90 /tmp/bgc-new --dtypes bf16,fp16 --shapes $B > $OUT/bars.txt 2>&1; echo "bars rc=$? at $SECONDS s"
for b in old new; do for beta in 1 0; do echo "== $b beta $beta (dtype shape dev-x)"; tail -n +3 $OUT/bench-$b-beta$beta.txt | awk '{print $1, $2, $8}' | paste -sd' ' ; done; done
echo "== fp32 beta 1"; tail -n +3 $OUT/bench-new-fp32-beta1.txt | awk '{print $1, $2, $8}'
echo "== bars beta 0"; tail -n +3 $OUT/bars.txt | awk '{print $1, $2, $8}' | paste -sd' '

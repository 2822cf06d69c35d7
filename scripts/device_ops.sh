#!/bin/bash
# On the GPU machine (the `run` tool, which carries .deb/): builds the library, the
# GPU tests and bench_cuda_ops with plain g++ (no CMake packages needed there), runs
# the GPU tests, the library's softmax and layernorm with their default plans, and
# PyTorch on the same shapes. GoogleTest's sources travel as a Debian package:
#   mkdir -p .deb && (cd .deb && apt-get download googletest)      # here, once
#   scripts/device_ops.sh            # there; results under $OUT, a table last
set -eo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tessel-out}
O=/tmp/tessel-obj
mkdir -p "$OUT" "$O" /tmp/gt
for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=/tmp/gt/usr/src/googletest/googletest
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -I/usr/local/cuda/include"
# src/bench needs nlohmann_json, which the GPU machine may lack; nothing here uses it.
find src -name "*.cpp" | grep -v "^src/bench/" |
  xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o"
g++ -std=c++17 -O1 -I$GT/include -I$GT -c $GT/src/gtest-all.cc -o $O/gtest-all.o &
g++ -std=c++17 -O1 -I$GT/include -c $GT/src/gtest_main.cc -o $O/gtest_main.o &
for t in tests/gpu/*.cpp; do $CXX -I$GT/include -Itests -c $t -o $O/test_$(echo $t | tr / _).o & done
$CXX -c bench/bench_cuda_ops.cpp -o $O/bench_cuda_ops.o &
wait
LIBS="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
g++ -o $O/gpu_tests $O/test_*.o $O/src_*.o $O/gtest-all.o $O/gtest_main.o $LIBS
g++ -o $O/bench_cuda_ops $O/bench_cuda_ops.o $O/src_*.o $LIBS
echo "built at $SECONDS s"
timeout 150 $O/gpu_tests --gtest_brief=1 > "$OUT/gpu-tests.txt" 2>&1 || echo "gpu tests FAILED"
grep -E "PASSED|FAILED|SKIPPED" "$OUT/gpu-tests.txt" | head
timeout 120 $O/bench_cuda_ops --library-only --rounds 5 > "$OUT/library-default-plans.txt" 2>&1
PYTHONUNBUFFERED=1 timeout 90 python3 bench/peers/ops_peers.py > "$OUT/pytorch.txt" 2>&1 || echo "PyTorch step failed"
cut -c1-170 "$OUT/library-default-plans.txt"
cat "$OUT/pytorch.txt"

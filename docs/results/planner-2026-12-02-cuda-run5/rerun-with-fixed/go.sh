#!/usr/bin/env bash
# Session 15 call 6: run 5's GEMM held-out again (seed 4, run 5's calibration file) with the six
# fixed plans measured on every shape (run 5's snapshot left docs/results, and so the fixed plans, out).
HERE=$(dirname "$(readlink -f "$0")")
cd "$HERE/cur"
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/o && cxx="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$cxx -c {} -o /tmp/o/\$(echo {} | tr / _).o" || exit 1
g++ -o /tmp/o/tessel /tmp/o/tools_*.o /tmp/o/src_*.o -L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread || exit 1
echo "built at $SECONDS s"
mkdir -p $OUT/h
timeout 150 /tmp/o/tessel tune tests/plan/gemm_bf16.tir --target cuda --threads 1 --jobs 16 --rounds 7 --min-run-us 500 \
  --no-tuning-cache --heldout 50 --seed 4 --range 16:512 --align 1 --top 4 --extra 2 \
  --calibration $HERE/cal/calibration-gemm_bf16-cuda.txt --out $OUT/h --fixed-plans $HERE/cal/fixed-gemm_bf16.txt \
  --budget-s 110 > $OUT/h/heldout-gemm_bf16.log 2> $OUT/h/heldout-gemm_bf16.stderr; echo "heldout rc=$? at $SECONDS s"
tar -czf $OUT/h.tgz -C $OUT h
grep -A20 "held-out shapes in" $OUT/h/heldout-gemm_bf16.log

#!/bin/bash
# Sixty-fourth session, an experiment (nothing here is committed code): the fma atom's
# operand reads through 32-bit shared addresses (tsl_lds*) in every fp32 kernel, not
# only under the two-block bound, built beside the tree as it is (/tmp/bgc-exp against
# /tmp/bgc-base), and a producer warp on the default fp32 plans (--plan producers=1).
# Three alternating rounds, fp32, device time.
cd "$(dirname "$0")/../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
rm -rf /tmp/exp && mkdir -p /tmp/exp
tar --exclude=./build --exclude=./docs --exclude=./.git -cf - . | tar -xf - -C /tmp/exp
sed -i 's/if (two_block_bound) return "tsl_lds"/if (true) return "tsl_lds"/' /tmp/exp/src/target/cuda/cuda_emit.cpp
grep -c 'if (true) return "tsl_lds"' /tmp/exp/src/target/cuda/cuda_emit.cpp || { echo "sed did not apply"; exit 1; }
bash scripts/device_bench_gemm.sh . base > /tmp/b1.log 2>&1 &
bash scripts/device_bench_gemm.sh /tmp/exp exp > /tmp/b2.log 2>&1 &
wait
[ -x /tmp/bgc-base ] && [ -x /tmp/bgc-exp ] || { tail -20 /tmp/b1.log /tmp/b2.log; exit 1; }
echo "built at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,3000x2000x1500,1000x1000x1000,6000x4000x3000,2500x3000x900,512x512x512,200x300x400,1200x800x700
for r in 1 2 3; do
  timeout 100 /tmp/bgc-base --dtypes fp32 --shapes $S >> $OUT/base.txt 2>&1
  timeout 100 /tmp/bgc-exp --dtypes fp32 --shapes $S >> $OUT/exp.txt 2>&1
  timeout 60 /tmp/bgc-base --dtypes fp32 --shapes 4096x4096x4096,8192x8192x8192,3000x2000x1500 \
    --plan producers=1 >> $OUT/producers.txt 2>&1
  echo "round $r at $SECONDS s"
done
for f in base exp producers; do
  echo "== $f"
  awk '$1 == "fp32" {v[$2]=v[$2]" "$8} END{for(k in v) print k, v[k]}' $OUT/$f.txt | sort
done

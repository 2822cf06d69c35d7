#!/bin/bash
# bf16: 256-row tiles on two consumer warpgroups (128 rows each) beside the default,
# on the class shapes still under 0.75 and four that are not; then the defaults on
# eight shapes drawn this session (bf16 and fp16), the bar check.
cd "$(dirname "$0")/../../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 || { tail -30 $OUT/bbuild.log; exit 1; }
echo "built at $SECONDS s"
LOW=1104x5368x4440,4696x2040x3456,1544x5352x1848,1576x1952x1464,4168x2280x1272,1024x5000x3000,1456x4024x1032,2680x1336x1728,1672x2744x3488
REF=4096x4096x4096,8192x8192x8192,2048x2048x2048,1184x3304x2504
timeout 420 /tmp/bgc-new --dtypes bf16 --shapes $LOW,$REF --plan tile=256x128x64,workers=2 \
  --plan tile=256x160x64,workers=2 --plan tile=256x192x64,workers=2 \
  --plan tile=256x128x64,workers=2,persistent=0,cluster=2 --plan tile=256x160x64,workers=2,persistent=0,cluster=2 \
  > $OUT/sweep.txt 2>&1
echo "sweep rc=$? at $SECONDS s"; cat $OUT/sweep.txt
NEW=1140x4364x1208,4240x5664x1892,5580x1644x3152,5552x4312x4224,3752x3808x1376,3308x3692x5720,5220x4144x4960,1764x5648x5132
timeout 120 /tmp/bgc-new --dtypes bf16,fp16 --shapes $NEW > $OUT/fresh.txt 2>&1
echo "fresh rc=$? at $SECONDS s"; cat $OUT/fresh.txt

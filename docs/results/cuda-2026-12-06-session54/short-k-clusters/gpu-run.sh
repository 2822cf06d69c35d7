#!/bin/bash
# Fifty-fourth session, second call. carry [".deb"]. Builds this tree's GPU tests and
# bench_gemm_cuda; runs the cuda/gpu tests but the wgmma window sweep; then 16-bit
# shapes with every dimension >= 1024 and K from 1024 to 2048 whose default tile rows,
# paired, add no wave (the cluster rule's other conditions; it asks K > 2048), each
# with its default plan and with clusters of two, two rounds; then the squares.
cd "$(dirname "$0")/../../../.."
export TESSEL_CACHE_DIR=/tmp/tessel-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > /tmp/bbuild.log 2>&1 &
timeout 330 bash scripts/device_cmake.sh build-dev test_gpu test_cuda tessel_cli || exit 1
wait
echo "built at $SECONDS s"; tail -1 /tmp/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -E WgmmaPlansEveryWindow -j4 --output-on-failure) > $OUT/tests.txt 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.txt | grep -v Skipped | tail -12
S=2680x1336x1728,1920x1384x1424,2504x1744x1768,2144x4616x1640,5752x4152x1456,2656x1480x2040,5520x4728x1216
S=$S,5464x3808x1632,4608x5824x1104,4104x1120x1768,3200x1024x1496,1192x2416x1304,5768x2472x1928,2976x3024x1064
for round in 1 2; do
  [ $SECONDS -gt 470 ] && break
  echo "== round $round" >> $OUT/clusters.txt
  timeout 90 /tmp/bgc-new --dtypes bf16,fp16 --shapes $S --plan "" --plan cluster=2 >> $OUT/clusters.txt 2>&1
done
echo "== dtype shape plan: cuBLAS time / tessel time (device) per round"
awk '$1=="bf16"||$1=="fp16"{p=$NF; if (p ~ /^[0-9.e-]+$/) p="default"; print $1, $2, p, $8}' $OUT/clusters.txt |
  sort | awk '{k=$1" "$2" "$3; v[k]=v[k]" "$4} END {for (x in v) print x, v[x]}' | sort
[ $SECONDS -lt 500 ] && timeout 60 /tmp/bgc-new --dtypes fp32,tf32,bf16,fp16 --shapes 4096x4096x4096,8192x8192x8192 > $OUT/squares.txt 2>&1
awk '$1 ~ /^(fp32|tf32|bf16|fp16)$/ {print $1, $2, $8}' $OUT/squares.txt

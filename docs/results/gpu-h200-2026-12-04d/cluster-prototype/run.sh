#!/bin/bash
# Clusters of two with B multicast, by hand on tessel's emitted 128x256 bf16 kernel
# (mk.py turns kernel_base.cu into kernels.cu), against the same kernel plain and cuBLAS.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE
nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a main.cu -o /tmp/c2main -lcublas -lcuda || exit 1
echo "built at $SECONDS s"
/tmp/c2main 1184x3304x2504 1024x5000x3000 1432x2576x2616 4064x1512x2056 5112x1800x4496 1104x5368x4440 \
  1576x1952x1464 2048x2048x2048 4096x4096x4096 8192x8192x8192 2>&1 | tee $OUT/c2-variants.txt

echo "done at $SECONDS s"

#!/bin/bash
# Sixty-fifth session, second call: CudaOps.SpecializedProgramsRefuseOtherSizes on a
# copy of the tree whose cuda bind no longer calls check_fixed_sizes; the test must
# fail there. carry [".deb"].
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/broken
cp -r CMakeLists.txt cmake include src tests tools bench blas kernels examples python scripts fuzz pyproject.toml \
  README.md docs .deb /tmp/broken/ 2>/dev/null
cd /tmp/broken
sed -i '/check_fixed_sizes(program_.name, program_.fixed_sizes, args.sizes);/d' src/target/cuda/cuda_kernel.cpp
grep -c check_fixed_sizes src/target/cuda/cuda_kernel.cpp
timeout 400 bash scripts/device_cmake.sh build-dev test_gpu || exit 1
echo "built at $SECONDS s"
timeout 60 build-dev/test_gpu --gtest_filter='CudaOps.Specialized*' > $OUT/broken.txt 2>&1
echo "broken test rc=$?"
grep -E "Failure|no error|changed|PASSED|FAILED|error" $OUT/broken.txt | head -12

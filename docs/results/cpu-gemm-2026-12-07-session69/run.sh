#!/bin/bash
# The sixty-ninth session's runs: each `tessel bench` against the session's start
# (BASE, measured as impl `reference`), one thread, two rounds. Run from the repository
# root after building; OUT is this folder.
set -e
BASE=${BASE:-/tmp/tessel-base}
OUT=${OUT:-docs/results/cpu-gemm-2026-12-07-session69}
bench() {
  local dir=$1 impls=$2 shapes=$3
  rm -rf "$OUT/$dir"
  env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Cooperlake build/tessel bench --impl "$impls" --reference "$BASE" \
    --shapes "$shapes" --threads 1 --rounds 2 --out "$OUT/$dir" > /dev/null
}
# Products of 4 to 16 rows that fit a kernel of any strides: now a dense one too.
bench dense-rows tessel,reference,libxsmm \
  16x16x16,16x12x11,14x13x7,9x15x9,8x8x8,10x16x4,12x9x16,15x16x3,16x7x9,4x16x16,5x16x20,6x12x12,7x16x9,4x32x8,6x20x10,7x24x5,5x8x30,4x40x6
# Random tiny products, seed 691: M 1-16, N 1-32, K 1-32.
bench scan-tiny tessel,reference,libxsmm \
  5x9x7,15x19x21,7x20x24,4x18x23,15x22x12,2x9x9,8x21x5,9x25x20,5x10x8,12x17x4,11x30x17,3x2x6,10x9x4,4x23x31,5x5x8,2x26x15
# The smallest products, and shapes whose units now jump to the general body.
bench tiny tessel,reference,libxsmm \
  4x4x4,3x3x3,1x7x1,2x16x8,3x16x17,13x14x25,28x137x13,80x173x9,256x174x20,300x48x30,100x40x50,66x42x9
bench suite tessel,reference,libxsmm,openblas seed

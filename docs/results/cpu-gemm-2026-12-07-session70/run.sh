#!/bin/bash
# The seventieth session's runs: each `tessel bench` against the session's start
# (BASE, 1e57a1f, measured as impl `reference`), one thread. Run from the repository
# root after building; OUT is this folder. compile.txt: the sixty-eighth session's
# compile.sh on the shapes it names.
set -e
BASE=${BASE:-/tmp/tessel-base}
OUT=${OUT:-docs/results/cpu-gemm-2026-12-07-session70}
bench() {
  local dir=$1 impls=$2 shapes=$3
  shift 3
  rm -rf "$OUT/$dir"
  env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Cooperlake build/tessel bench --impl "$impls" --reference "$BASE" \
    --shapes "$shapes" --threads 1 --out "$OUT/$dir" "$@" > /dev/null
}
# Units whose one leaf now serves both betas (several tiny kernels a call).
LEAF=39x12x11,35x9x12,33x10x10,48x44x13,66x42x9,36x88x9,11x200x30,300x48x30,28x137x13
bench leaf/beta0 tessel,reference "$LEAF" --rounds 3 --beta 0
bench leaf/beta1 tessel,reference "$LEAF" --rounds 3 --beta 1
# Dense kernels in top-level asm, against the tree before (8a30f3a, built to BEFORE).
BASE=${BEFORE:-/tmp/tessel-head} bench asm tessel,reference \
  4x4x4,10x16x4,16x16x16,14x13x7,39x12x11,48x44x13,28x137x13,256x174x20 --rounds 3
# Four -O1 passes left out, against the tree before (ae649cc, built to BEFORE2).
for beta in 0 0.5; do
  BASE=${BEFORE2:-/tmp/tessel-asm} bench flags/beta$beta tessel,reference \
    4x4x4,10x16x4,16x16x16,14x13x7,2x16x8,39x12x11,48x44x13,28x137x13,300x48x30,256x174x20 --rounds 3 --beta $beta
done
# The smallest products and units of tiny kernels (two units now), then the suite.
bench tiny tessel,reference,libxsmm \
  4x4x4,3x3x3,1x7x1,2x16x8,10x16x4,16x16x16,14x13x7,28x137x13,80x173x9,256x174x20,300x48x30,200x250x30 --rounds 3
bench suite tessel,reference,libxsmm,openblas seed --rounds 3

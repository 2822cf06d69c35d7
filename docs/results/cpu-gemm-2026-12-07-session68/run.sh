#!/bin/bash
# The sixty-eighth session's runs: each `tessel bench` against the session's start
# (BASE, measured as impl `reference`), one thread, two rounds. Run from the repository
# root after building; OUT is this folder.
set -e
BASE=${BASE:-/tmp/tessel-base}
OUT=${OUT:-docs/results/cpu-gemm-2026-12-07-session68}
bench() {
  local dir=$1 impls=$2 shapes=$3
  rm -rf "$OUT/$dir"
  env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Cooperlake build/tessel bench --impl "$impls" --reference "$BASE" \
    --shapes "$shapes" --threads 1 --rounds 2 --out "$OUT/$dir" > /dev/null
}
bench tiny tessel,reference,libxsmm \
  4x4x4,8x8x8,16x12x11,14x13x7,2x64x32,3x3x3,9x15x9,1x7x1,5x33x3,16x16x16,12x20x10,7x7x7,2x16x8,3x16x17,13x14x25,28x12x11
bench chunks tessel,reference,libxsmm \
  39x12x11,137x10x30,105x10x110,268x8x64,109x4x1,600x16x10,48x44x13,67x61x9,66x42x9,108x47x23,92x43x13,60x24x20,100x40x50,42x37x43,180x50x7,300x48x30,200x28x11
bench col-blocks tessel,reference,libxsmm \
  41x142x22,28x137x13,80x173x9,36x88x9,76x224x17,256x174x20,60x125x32,19x100x42,128x128x16,20x300x30,100x80x12
# Random shapes: seed 681 draws M 8-300, N 17-64, K 6-300; seed 682 every dimension 8-300.
bench scan-class tessel,reference,libxsmm,openblas \
  219x61x167,65x46x202,33x47x175,16x24x277,102x62x87,85x35x105,157x17x261,257x63x226,99x22x23,60x54x14,151x49x151,121x64x73,38x54x52,41x17x13,198x36x295,207x53x123
bench scan-random tessel,reference,libxsmm,openblas \
  278x127x110,34x210x242,221x156x127,109x220x93,136x28x49,173x14x12,41x142x22,295x231x269,177x237x279,236x200x151,143x134x299,256x174x20
bench suite tessel,reference,libxsmm,openblas seed

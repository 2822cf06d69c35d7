#!/bin/bash
# The seventy-first session's cpu tables (the Xeon, family 6 model 167). Builds of the
# session's steps, each copied from build/tessel after `ninja -C build tessel`:
#   /tmp/tessel-head  = 5f26376 (the session's start)
#   /tmp/tessel-regs  = 53a7f4f (the leaves' registers, PreparedGemm::run inline)
#   /tmp/tessel-dense = 78a6225 (dense tiny kernels from 8 FMAs)
# Every table was made from the tree of its step with build/tessel; `seed` is the suite.
set -e
B="env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Cooperlake build/tessel bench"
# At 53a7f4f:
$B --impl tessel,reference,libxsmm --reference /tmp/tessel-head --threads 1 --rounds 2 --out regs-beta0 \
  --shapes 4x4x4,1x7x1,2x16x8,10x16x4,14x13x7,16x16x16,3x4x5,13x59x8,32x32x32,28x137x13
$B --impl tessel,reference,libxsmm --reference /tmp/tessel-head --threads 1 --rounds 2 --beta 1 --out regs-beta1 \
  --shapes 4x4x4,1x7x1,2x16x8,10x16x4,14x13x7,16x16x16,3x4x5,2x2x3,12x14x2,28x137x13
T=10x32x32,3x28x13,2x19x29,9x13x1,5x23x30,1x26x4,12x15x31,10x15x1,3x14x14,3x29x2,14x14x25,14x24x23,11x1x24,14x27x24
$B --impl tessel,libxsmm --threads 1 --rounds 2 --beta 1 --out tiny-beta1 --shapes $T
$B --impl tessel,reference,libxsmm --reference /tmp/tessel-head --threads 1 --rounds 2 --out tiny-beta0 \
  --shapes $T,2x9x9,10x9x4,2x26x15
# At 78a6225:
$B --impl tessel,reference,libxsmm --reference /tmp/tessel-regs --threads 1 --rounds 3 --out dense-rows \
  --shapes 3x14x14,2x9x9,2x26x15,1x26x4,3x28x13,1x7x1,2x16x8,3x4x5,2x2x3,3x29x2,1x100x20,2x50x2,1x3x2,2x5x4,3x3x3,1x16x16,3x40x7,2x33x12
# With C's masked rests in pieces (not kept; the tree of 78a6225 plus that change):
$B --impl tessel,reference,libxsmm --reference /tmp/tessel-dense --threads 1 --rounds 2 --beta 1 --out pieces-beta1 \
  --shapes 1x7x1,9x13x1,1x26x4,3x29x2,3x14x14,2x9x9,5x23x30,12x15x31,14x27x24,24x7x3,7x30x5,16x13x16,10x9x4,6x44x8
# At 78a6225 (scan-1t at 5f26376, before any change: seed 711, 24 shapes 8-128 and 8 of 100-700):
$B --impl tessel,libxsmm,openblas --threads 1 --rounds 2 --out scan-1t --shapes \
  86x70x58,97x62x53,37x63x113,39x36x42,69x89x50,27x20x92,13x59x8,65x63x91,26x126x38,76x30x32,42x30x112,112x53x18,101x62x64,67x57x28,56x57x34,44x47x75,67x33x36,30x96x25,40x99x44,128x122x54,122x105x9,112x128x75,118x68x45,115x35x121,518x201x386,117x143x184,658x506x385,420x652x568,416x543x566,310x664x296,650x605x385,434x607x468
$B --impl tessel,libxsmm --threads 1 --rounds 2 --out short-k --shapes \
  15x38x9,15x68x10,12x101x4,22x52x14,17x116x12,34x57x13,19x34x15,14x33x9,14x81x14,14x54x15,8x99x4,38x47x16,13x59x8
$B --impl tessel,openblas --threads 2 --rounds 2 --out scan-2t --shapes \
  599x852x490,573x690x900,612x872x265,469x816x651,575x890x291,1968x1363x380,1362x1281x362,1295x1058x1373,1126x2004x1213,49x124x143,191x64x61,175x54x154
$B --impl tessel,reference,libxsmm,openblas --reference /tmp/tessel-head --threads 1 --rounds 3 --out suite \
  --shapes seed,1024x1024x1024
# compile.txt, twice (the start, then the tree at 78a6225):
# BASE=/tmp/tessel-head NEW=build/tessel bash docs/results/cpu-gemm-2026-12-07-session68/compile.sh \
#   4x4x4 3x4x5 2x26x15 16x16x16 14x13x7 28x137x13 80x173x9 256x174x20 200x250x30 128x256x16 200x200x200 1024x1024x1024

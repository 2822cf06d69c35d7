#!/bin/bash
# Few-tile, long-K shapes whose default plans have small blocks (mma.sync for 16-bit
# under 2^27 multiply-adds, fp32's 32x32 and 64x64 fma tiles): cuBLAS / tessel device
# time with K in 1, 2, 4, 8, 16 slices (bench_gemm_cuda --plan split=S), two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur  # the tree at 5933843, snapshot beside this script (.snap/cur)
scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
echo "built at $SECONDS s"
P="--plan split=1 --plan split=2 --plan split=4 --plan split=8 --plan split=16"
S16=64x64x16384,32x128x8192,128x128x4096,100x100x10000,16x1024x8192,256x128x2048,200x200x3000
S32=16x4096x4096,200x300x10000,300x1000x8000,250x250x6000,128x1024x4096,64x64x16384
for r in 1 2; do
  TESSEL_CACHE_DIR=/tmp/kc /tmp/bgc-cur --dtypes bf16 --shapes $S16 $P > $OUT/s16-$r.txt 2>&1
  echo "bf16 round $r at $SECONDS s"
  TESSEL_CACHE_DIR=/tmp/kc /tmp/bgc-cur --dtypes fp32 --shapes $S32 $P > $OUT/s32-$r.txt 2>&1
  echo "fp32 round $r at $SECONDS s"
done
TESSEL_CACHE_DIR=/tmp/kc /tmp/bgc-cur --dtypes fp16 --shapes $S16 $P > $OUT/s16h-1.txt 2>&1
echo "fp16 at $SECONDS s"
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + '/s*.txt')):
    for l in open(f):
        p = l.split()
        if len(p) >= 11 and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]][p[10]].append('%s(%s)' % (p[7], p[4].replace('us', '')))
for k, vv in d.items():
    print('%-24s ' % k + '  '.join('%s:%s' % (s.replace('split=', 'S'), ','.join(v)) for s, v in vv.items()))
PY
echo "done at $SECONDS s"

#!/bin/bash
# bf16: the default plans against 128x64 tiles (two consumer warpgroups of 64x64), no split.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192,1024x1024x4096,1024x1536x6144,2048x1024x8192,1280x1024x12288,512x512x8192,1024x1024x1024,3072x2048x1024
/tmp/bgc --dtypes bf16 --shapes $S > $OUT/default.txt 2>&1
for w in 4 6 8; do /tmp/bgc --dtypes bf16 --shapes $S --plan tile=128x64x64,workers=2,window=$w > $OUT/t128x64-w$w.txt 2>&1; done
/tmp/bgc --dtypes bf16 --shapes $S > $OUT/default2.txt 2>&1
python3 - $OUT <<'PY'
import sys
def rows(f):
    d = {}
    for l in open(f):
        p = l.split()
        if p and p[0] == 'bf16': d[p[1]] = (float(p[7]), p[4], p[5])
    return d
a, b, b6, b8, c = (rows(sys.argv[1] + '/' + n) for n in ('default.txt', 't128x64-w4.txt', 't128x64-w6.txt', 't128x64-w8.txt', 'default2.txt'))
print('%-18s %8s %8s %8s %8s %8s  (dev x)' % ('shape', 'default', 'w4', 'w6', 'w8', 'default'))
for s in a: print('%-18s %8.3f %8.3f %8.3f %8.3f %8.3f' % (s, a[s][0], b.get(s, (0,))[0], b6.get(s, (0,))[0], b8.get(s, (0,))[0], c.get(s, (0,))[0]))
PY
echo "done at $SECONDS s"

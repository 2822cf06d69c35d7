#!/bin/bash
# Programmatic dependent launch: old (HEAD) against new (the working tree), alternating,
# bench_gemm_cuda; then a broken tree (the wait removed) on split-K shapes; then the GPU
# tests and the sanitizers on the new tree.
HERE=$(dirname "$(readlink -f "$0")")
mkdir -p $OUT/ab $OUT/check $OUT/san
build() {  # $1 tree, $2 output
  (cd $HERE/$1 && O=/tmp/o-$1 && mkdir -p $O &&
   CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include" &&
   find src tools -name "*.cpp" | xargs -P 6 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" &&
   $CXX bench/bench_gemm_cuda.cpp $O/src_*.o -L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread -lcublas -lcudart -o $2)
}
build old /tmp/bgc-old & build cur /tmp/bgc-new & build broken /tmp/bgc-broken & wait
ls /tmp/bgc-old /tmp/bgc-new /tmp/bgc-broken || exit 1
echo "built at $SECONDS s"
S=1024x1024x8192,512x512x8192,16x4096x4096,1024x1024x4096,2048x1024x8192,64x64x64,256x256x256
for r in 1 2; do
  for v in old new; do
    TESSEL_CACHE_DIR=/tmp/kc-$v timeout 60 /tmp/bgc-$v --dtypes bf16,tf32 --shapes $S > $OUT/ab/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
python3 - $OUT/ab <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-[12].txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'tf32', 'fp32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s/%s' % (p[6], p[7]))
print('%-22s %-26s %-26s  (host x / dev x, cuBLAS / tessel)' % ('dtype shape', 'old', 'new'))
for k, vv in d.items(): print('%-22s %-26s %-26s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'new'))))
PY
TESSEL_CACHE_DIR=/tmp/kc-broken timeout 60 /tmp/bgc-broken --dtypes bf16,tf32 --shapes 1024x1024x8192,512x512x8192,16x4096x4096,256x512x16384 > $OUT/ab/broken.txt 2>&1
echo "== broken (no griddepcontrol.wait): rc $?"; grep -E "^(bf16|tf32)|rror|mismatch" $OUT/ab/broken.txt | head
echo "ab done at $SECONDS s"
(cd $HERE/cur && DEB=$HERE/../.deb OUT=$OUT/check STEPS="tests" timeout $((560 - SECONDS)) bash scripts/device_check.sh 2>&1 | tail -4)
echo "tests done at $SECONDS s"
(cd $HERE/cur && REUSE=1 DEB=$HERE/../.deb OUT=$OUT/san STEPS="sanitize" timeout $((590 - SECONDS)) bash scripts/device_check.sh 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | cut -c1-160)
echo "all done at $SECONDS s"

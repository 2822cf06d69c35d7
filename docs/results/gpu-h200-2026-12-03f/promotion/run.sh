#!/bin/bash
# Tensor maps' L2 promotion: 128B (HEAD, old), 256B (p256), none (pnone); alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/old
for v in old p256 pnone; do (scripts/device_bench_gemm.sh $HERE/$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-p256 /tmp/bgc-pnone || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
S=3000x3000x3000,4096x4096x4096,1024x1024x8192,1536x1024x8192,2500x3500x1500,3000x2000x4000,5000x5000x2000,2000x2000x2000,6000x4000x3000,1000x1000x8192,3000x8192x3000,1024x1024x4096
for r in 1 2; do
  for v in old p256 pnone; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16,fp16 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
for v in old p256 pnone; do
  TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes tf32,fp32 --shapes 4096x4096x4096,3000x3000x3000 > $OUT/$v-3.txt 2>&1
done
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s)' % (p[7], p[4].replace('us','')))
print('%-22s %-30s %-30s %-30s (cuBLAS/tessel dev, tessel us)' % ('dtype shape', 'old', 'p256', 'pnone'))
for k, vv in d.items(): print('%-22s %-30s %-30s %-30s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'p256', 'pnone'))))
PY
echo "done at $SECONDS s"

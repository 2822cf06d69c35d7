#!/bin/bash
# The default wgmma tile (with its split-K estimate) restricted to one tile: t256, t192, t128,
# against HEAD's choice (old), shapes whose tiles fill under a wave; alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/old
for v in old t256 t192 t128; do (scripts/device_bench_gemm.sh $HERE/$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-t256 /tmp/bgc-t192 /tmp/bgc-t128 || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
S=1100x1024x8192,1024x1024x8192,1536x1024x8192,1100x1000x4096,1280x1024x6144,1200x1100x8192,1024x1536x6144,2048x1024x8192,1400x1400x4096,1100x1100x2048
for r in 1 2; do
  for v in old t256 t192 t128; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
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
vs = ('old', 't256', 't192', 't128')
print('%-21s' % 'dtype shape' + ''.join('%-27s' % v for v in vs) + ' (cuBLAS/tessel dev, tessel us)')
for k, vv in d.items(): print('%-21s' % k + ''.join('%-27s' % ' '.join(vv.get(v, [])) for v in vs))
PY
echo "done at $SECONDS s"

#!/bin/bash
# Split-K fused: where the time goes. old (HEAD, two kernels), new (fused), v1 (fused,
# the sum never runs: wrong results, timing only), v2 (v1 without the ticket's fences).
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
for v in old cur v1 v2; do (scripts/device_bench_gemm.sh $HERE/$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur /tmp/bgc-v1 /tmp/bgc-v2 || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
S=16x4096x4096,1024x1024x8192,500x700x8192,1100x1000x4096
for r in 1 2; do
  for v in old cur v1 v2; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
done
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16', 'fp32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s' % (p[4]))
print('%-24s %-20s %-20s %-20s %-20s (tessel device us)' % ('dtype shape', 'old', 'cur', 'v1', 'v2'))
for k, vv in d.items(): print('%-24s %-20s %-20s %-20s %-20s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur', 'v1', 'v2'))))
PY
echo "done at $SECONDS s"

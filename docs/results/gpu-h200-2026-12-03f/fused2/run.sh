#!/bin/bash
# Split-K fused (the last slice sums; two slices add their own registers) against
# HEAD's two kernels, alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
(scripts/device_bench_gemm.sh $HERE/old old > /tmp/b-old.log 2>&1) & (scripts/device_bench_gemm.sh $HERE/cur new > /tmp/b-new.log 2>&1) & wait
ls /tmp/bgc-old /tmp/bgc-new || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
S=1024x1024x8192,1536x1024x8192,1000x1000x8192,999x1001x8191,16x4096x4096,16x4000x4000,500x700x8192,100x3000x5000,1100x1000x4096,1200x1100x8192,1024x2048x8192,2048x1024x16384,1280x1024x6144,700x1100x5000
for r in 1 2; do
  for v in old new; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16,fp16 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
TESSEL_CACHE_DIR=/tmp/kc-new /tmp/bgc-new --dtypes fp32,tf32 --shapes 16x4096x4096,64x2048x8192 > $OUT/new-fp32.txt 2>&1
TESSEL_CACHE_DIR=/tmp/kc-old /tmp/bgc-old --dtypes fp32,tf32 --shapes 16x4096x4096,64x2048x8192 > $OUT/old-fp32.txt 2>&1
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-*.txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16', 'fp32', 'tf32'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s,%s)' % (p[7], p[4].replace('us',''), p[9]))
print('%-22s %-44s %-44s (cuBLAS/tessel dev, tessel us, diff)' % ('dtype shape', 'old', 'new'))
for k, vv in d.items(): print('%-22s %-44s %-44s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'new'))))
PY
grep -ih "error\|nan\|fail" $OUT/new-*.txt | sort | uniq -c | head -5
echo "done at $SECONDS s"

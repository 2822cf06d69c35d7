#!/bin/bash
# Split-K's partial rows padded to 128-byte lines (new, the working tree) against HEAD
# (old), alternating, two rounds; then the sum's floor (sumfloor/).
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
(scripts/device_bench_gemm.sh $HERE/old old > /tmp/b-old.log 2>&1) & (scripts/device_bench_gemm.sh $HERE/cur new > /tmp/b-new.log 2>&1) & wait
ls /tmp/bgc-old /tmp/bgc-new || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
S=1000x1000x8192,999x1001x8191,16x4000x4000,500x700x8192,1000x1000x4096,100x3000x5000,1024x1024x8192,16x4096x4096
for r in 1 2; do
  for v in old new; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16,fp16 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
python3 - $OUT <<'PY'
import sys, glob, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + '/*-[12].txt')):
    v = f.split('/')[-1].split('-')[0]
    for l in open(f):
        p = l.split()
        if p and p[0] in ('bf16', 'fp16'):
            d[p[0] + ' ' + p[1]].setdefault(v, []).append('%s(%s us)' % (p[7], p[4]))
print('%-24s %-30s %-30s   (cuBLAS / tessel device time, tessel us)' % ('dtype shape', 'old', 'new'))
for k, vv in d.items(): print('%-24s %-30s %-30s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'new'))))
PY
grep -ih "error\|nan" $OUT/new-*.txt | sort | uniq -c | head -5
bash $HERE/sumfloor/run.sh
echo "done at $SECONDS s"

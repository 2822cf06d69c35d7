#!/bin/bash
# L2 promotion by rule (256 B on rows on 256-byte boundaries: cur) against HEAD (128 B: old),
# alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
for v in old cur; do (scripts/device_bench_gemm.sh $HERE/$v $v > /tmp/b-$v.log 2>&1) & done; wait
ls /tmp/bgc-old /tmp/bgc-cur || { tail -5 /tmp/b-*.log; exit 1; }
echo "built at $SECONDS s"
S=1024x1024x8192,1536x1024x8192,3000x3000x4096,1000x1000x8192,2048x1536x8192,1024x1024x16384,1280x1280x4096,768x1024x8192,4096x1024x4096,1024x2048x4096,2048x2048x8192,1920x1152x6144,1100x1024x8192,3000x2048x4096,1152x1152x8192,4096x4096x4096
for r in 1 2; do
  for v in old cur; do
    TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes bf16,fp16 --shapes $S > $OUT/$v-$r.txt 2>&1
  done
  echo "round $r at $SECONDS s"
done
for v in old cur; do
  TESSEL_CACHE_DIR=/tmp/kc-$v /tmp/bgc-$v --dtypes tf32 --shapes 1024x1024x8192,1536x1024x8192,2048x2048x8192 > $OUT/$v-3.txt 2>&1
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
print('%-22s %-30s %-30s (cuBLAS/tessel dev, tessel us)' % ('dtype shape', 'old', 'cur'))
for k, vv in d.items(): print('%-22s %-30s %-30s' % (k, *(' '.join(vv.get(v, [])) for v in ('old', 'cur'))))
PY
grep -ih "error\|nan\|fail" $OUT/cur-*.txt | sort | uniq -c | head -5
echo "done at $SECONDS s"

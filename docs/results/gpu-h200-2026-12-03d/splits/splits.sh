#!/bin/bash
# Shapes whose 128x128 tiles fill more than half of the multiprocessors and less than
# one wave, long K: the default against K in S slices (the two-kernel split).
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
scripts/device_bench_gemm.sh . new > /tmp/b-new.log 2>&1 || { tail -5 /tmp/b-new.log; exit 1; }
echo "built at $SECONDS s"
S=1100x1000x4096,1100x1100x4096,1280x1280x4096,1536x1024x8192,1200x1100x8192,1024x1536x6144,1100x1100x2048
TESSEL_CACHE_DIR=/tmp/kc /tmp/bgc-new --dtypes bf16 --shapes $S --plan "" --plan split=1 --plan split=2 \
  --plan split=3 --plan split=4 --plan split=6 > $OUT/splits.txt 2>&1
python3 - $OUT/splits.txt <<'PY'
import sys, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    p = l.split()
    if p and p[0] == 'bf16': d[p[1]].append('%s:%s(%s)' % (p[10] if len(p) > 10 else 'default', p[7], p[4]))
for k, v in d.items(): print(k, ' '.join(v))
PY
grep -i error $OUT/splits.txt | head -3
echo "done at $SECONDS s"

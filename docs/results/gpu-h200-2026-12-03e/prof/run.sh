#!/bin/bash
# Where the fused split-K kernel's last slice spends its time: Nsight Compute samples
# per SASS instruction, bf16 16x4096x4096 and 1100x1000x4096.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
scripts/device_bench_gemm.sh $HERE/cur cur > /tmp/b-cur.log 2>&1 || { tail -5 /tmp/b-cur.log; exit 1; }
export PATH=/usr/local/cuda/bin:$PATH
for s in 16x4096x4096 1100x1000x4096; do
  TESSEL_CACHE_DIR=/tmp/kc-cur ncu --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    -k regex:tessel_kernel -s 3 -c 1 /tmp/bgc-cur --dtypes bf16 --shapes $s > $OUT/sass-$s.csv 2> $OUT/ncu-$s.err
  TESSEL_CACHE_DIR=/tmp/kc-cur ncu --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
    -k regex:tessel_kernel -s 3 -c 1 /tmp/bgc-cur --dtypes bf16 --shapes $s > $OUT/ncu-$s.txt 2>&1
  python3 - $OUT/sass-$s.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors='replace')))
hi = next(i for i, r in enumerate(rows) if any('Source' == c for c in r))
h = rows[hi]
src = h.index('Source'); cols = [i for i, c in enumerate(h) if 'Sampling' in c and 'All' in c] or [i for i, c in enumerate(h) if 'Sampling' in c]
c = cols[0]
data = []
for r in rows[hi + 1:]:
    try: data.append((float(r[c] or 0), r[0], r[src]))
    except Exception: pass
tot = sum(d[0] for d in data)
print(sys.argv[1].split('/')[-1], 'samples', tot, 'column', h[c])
for d in sorted(data, reverse=True)[:22]: print('%7.0f %5s %s' % d)
PY
  grep -E "Duration|Registers|Local Memory|Block Limit|Achieved Occ" $OUT/ncu-$s.txt | head -8
done

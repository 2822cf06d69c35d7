#!/bin/bash
# Warm-cache per-kernel times (ncu --cache-control none) and the real timeline (nsys) of
# split-K calls at bf16 1024x1024x8192 and 16x4096x4096, beside cuBLAS.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
which nsys ncu
for S in 1024x1024x8192 16x4096x4096; do
  /tmp/bgc --dtypes bf16 --shapes $S --quick > $OUT/bgc-$S.txt 2>&1
  grep '^bf16' $OUT/bgc-$S.txt
  timeout 120 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,launch__grid_size,dram__bytes_read.sum,lts__t_bytes.sum -c 80 \
    /tmp/bgc --dtypes bf16 --shapes $S --quick > $OUT/ncu-$S.txt 2>&1
  echo "== ncu warm $S"
  python3 - $OUT/ncu-$S.txt <<'PY'
import sys, re
name = None; cur = {}
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'\s\s(\S.*? \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)), Context', line)
    if m: name = m.group(1)[-70:]; continue
    m = re.match(r'\s+(gpu__time_duration.sum|launch__grid_size|dram__bytes_read.sum|lts__t_bytes.sum)\s+(\S+)\s+([\d.,]+)', line)
    if m and name:
        u = m.group(2); v = float(m.group(3).replace(',', ''))
        v *= {'nsecond':1e-3,'usecond':1,'msecond':1e3,'byte':1e-6,'Kbyte':1e-3,'Mbyte':1,'Gbyte':1e3}.get(u, 1)
        cur.setdefault(name, {}).setdefault(m.group(1), []).append(v)
for n, d in cur.items():
    t = sorted(d.get('gpu__time_duration.sum', [0]))
    med = lambda k: sorted(d.get(k,[0]))[len(d.get(k,[0]))//2]
    print('%-70s n=%d med_us=%.2f grid=%s dram_MB=%.1f l2_MB=%.1f' % (n, len(t), t[len(t)//2], d.get('launch__grid_size',[0])[0], med('dram__bytes_read.sum'), med('lts__t_bytes.sum')))
PY
  if command -v nsys > /dev/null; then
    timeout 120 nsys profile -o /tmp/ns-$S -f true --stats=false /tmp/bgc --dtypes bf16 --shapes $S --quick > /dev/null 2>&1
    nsys stats -r cuda_gpu_trace -f csv -o /tmp/tr-$S /tmp/ns-$S.nsys-rep > /dev/null 2>&1
    cp /tmp/tr-$S*.csv $OUT/ 2>/dev/null
    echo "== nsys $S"
    python3 - /tmp/tr-$S*.csv <<'PY'
import sys, csv, collections
rows = list(csv.DictReader(open(sys.argv[1])))
ks = [r for r in rows if 'tessel' in r.get('Name','') or 'nvjet' in r.get('Name','') or 'gemm' in r.get('Name','').lower()]
# gaps between consecutive kernels and durations, last 40 kernels
ks = ks[-60:]
st = lambda r: float(r['Start (ns)']); du = lambda r: float(r['Duration (ns)'])
prev = None
agg = collections.defaultdict(list); gaps = collections.defaultdict(list)
for r in ks:
    n = r['Name'][:50]
    agg[n].append(du(r)/1e3)
    if prev is not None: gaps[(prev['Name'][:30], n[:30])].append((st(r) - st(prev) - du(prev))/1e3)
    prev = r
for n, v in agg.items(): v.sort(); print('%-50s n=%d med_us=%.2f' % (n, len(v), v[len(v)//2]))
for k, v in gaps.items(): v.sort(); print('gap %s -> %s: n=%d med_us=%.2f' % (k[0], k[1], len(v), v[len(v)//2]))
PY
  fi
done
echo "done at $SECONDS s"

#!/bin/bash
# Per-kernel device times (ncu, clocks left alone) of tessel and cuBLAS on few-tile long-K bf16 shapes.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/cur
O=/tmp/o; mkdir -p $O
CXX="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$PWD\" -Isrc -Iinclude -Ibench -I/usr/local/cuda/include"
find src tools -name "*.cpp" | xargs -P 16 -I{} sh -c "$CXX -c {} -o $O/\$(echo {} | tr / _).o" || exit 1
L="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
$CXX bench/bench_gemm_cuda.cpp $O/src_*.o $L -lcublas -lcudart -o /tmp/bgc || exit 1
echo "built at $SECONDS s"
which ncu || ls /opt/nvidia/nsight-compute/*/ncu
for S in 1024x1024x8192 1024x1024x4096 2048x1024x8192; do
  /tmp/bgc --dtypes bf16 --shapes $S --quick > $OUT/bgc-$S.txt 2>&1
  grep '^bf16' $OUT/bgc-$S.txt
  timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread -c 60 \
    /tmp/bgc --dtypes bf16 --shapes $S --quick > $OUT/ncu-$S.txt 2>&1
  echo "== $S"
  python3 - $OUT/ncu-$S.txt <<'PY'
import sys, re, collections
name = None; rows = collections.OrderedDict()
cur = {}
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'\s\s(\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context', line)
    if m: name = m.group(1)[:90]; continue
    m = re.match(r'\s+(gpu__time_duration.sum|launch__grid_size|launch__block_size|launch__registers_per_thread)\s+(\S+)\s+([\d.,]+)', line)
    if m and name:
        cur.setdefault(name, {}).setdefault(m.group(1), []).append(float(m.group(3).replace(',', '')) * (1e-3 if m.group(2) == 'nsecond' else 1e3 if m.group(2) == 'msecond' else 1))
for n, d in cur.items():
    t = sorted(d.get('gpu__time_duration.sum', [0]))
    print('%-90s n=%d med_us=%.2f grid=%s block=%s regs=%s' % (n, len(t), t[len(t)//2], d.get('launch__grid_size',[0])[0], d.get('launch__block_size',[0])[0], d.get('launch__registers_per_thread',[0])[0]))
PY
done
echo "done at $SECONDS s"

#!/bin/bash
# Clusters with B multicast (Plan::cluster): the GPU tests of the tree (the cluster
# test under the three sanitizers), then a first bench of the prototype's shapes,
# default plan against --plan cluster=2, bf16, alternating, two rounds.
HERE=$(dirname "$(readlink -f "$0")")
cd $HERE/../cur
(scripts/device_bench_gemm.sh $HERE/../cur cur > /tmp/b-cur.log 2>&1 || echo "bench build FAILED") &
DEB=$HERE/../../.deb OUT=$OUT STEPS="" bash scripts/device_check.sh || exit 1
wait
echo "built at $SECONDS s"
O=/tmp/o-cur
(cd tests/cuda && timeout 200 $O/gpu_tests --gtest_filter='CudaGemm.ClusterPlans*') > $OUT/cluster-test.txt 2>&1
echo "cluster test rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cluster-test.txt | tr '\n' ' ')"
for tool in memcheck racecheck synccheck; do
  ((cd tests/cuda && timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 $O/gpu_tests \
    --gtest_filter='CudaGemm.ClusterPlans*') > /tmp/san-$tool.txt 2>&1; echo $? > /tmp/san-$tool.rc) &
done
wait
for tool in memcheck racecheck synccheck; do
  echo "sanitizer $tool rc=$(cat /tmp/san-$tool.rc): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' /tmp/san-$tool.txt | tr '\n' ' ')" | tee -a $OUT/sanitizer.txt
  grep "^=========" /tmp/san-$tool.txt | head -20 >> $OUT/sanitizer.txt
done
echo "sanitizers at $SECONDS s"
export TESSEL_CACHE_DIR=/tmp/kc
S=1184x3304x2504,1432x2576x2616,1104x5368x4440,5112x1800x4496,1024x5000x3000,4064x1512x2056,1576x1952x1464,2048x2048x2048,4096x4096x4096,8192x8192x8192
mkdir -p /tmp/r
for r in 1 2; do
  /tmp/bgc-cur --dtypes bf16 --shapes $S > /tmp/r/def$r.txt 2>&1
  /tmp/bgc-cur --dtypes bf16 --shapes $S --plan cluster=2 > /tmp/r/c2$r.txt 2>&1
  echo "round $r at $SECONDS s"
done
for f in /tmp/r/*.txt; do echo "== $f"; cat $f; done > $OUT/raw.txt
python3 - /tmp/r <<'PY'
import sys, glob, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    v = f.split('/')[-1][:-5]
    for l in open(f):
        p = l.split()
        if len(p) >= 10 and p[0] == 'bf16': d[p[1]][v].append(p[7] + ('' if float(p[9]) < 1e-5 else '!' + p[9]))
for k, vv in d.items(): print('%-16s ' % k + ' '.join('%s:%s' % (s, ','.join(v)) for s, v in vv.items()))
PY
grep -i -E "error|what" /tmp/r/*.txt | head -5
echo "done at $SECONDS s"

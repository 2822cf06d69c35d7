export PATH=/usr/local/cuda/bin:$PATH
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 || { tail -20 $OUT/bbuild.log; exit 1; }
echo "built at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,2048x2048x2048,3000x2000x1500,1000x1000x1000
for r in 1 2; do for u in "" 1 2; do
  TSL_KKU=$u TESSEL_CACHE_DIR=/tmp/c-$u timeout 100 /tmp/bgc-new --dtypes fp32 --shapes $S > $OUT/kku-$u-$r.txt 2>&1
  echo "u=$u round $r rc=$? at $SECONDS s: $(tail -n +3 $OUT/kku-$u-$r.txt | awk '{print $2, $8}' | paste -sd' ')"
done; done

#!/bin/bash
# Forty-fifth session: every cuda/gpu test on this tree (the GPU code of 9d338d3,
# unchanged since), then the default plans on the 94 bf16/fp16
# class shapes and 30 more (sets A, B, V of gpu-h200-2026-12-04f/tile-clusters),
# and the square bars; one `run` call, carry [".deb"].
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
mkdir -p /tmp/gt; for f in .deb/*.deb; do dpkg -x "$f" /tmp/gt; done
GT=$(dirname "$(find /tmp/gt -name GTestConfig.cmake | head -1)")
JS=$(dirname "$(find /tmp/gt -name nlohmann_jsonConfig.cmake | head -1)")
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/machine.txt; cat $OUT/machine.txt
bash scripts/device_bench_gemm.sh . new > $OUT/bbuild.log 2>&1 &
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGTest_DIR="$GT" -Dnlohmann_json_DIR="$JS" \
    -DCMAKE_PREFIX_PATH=/tmp/gt/usr -DTESSEL_BLAS_TESTERS=/nonexistent -DTESSEL_REFERENCE_BLAS=/nonexistent/libblas.so.3 &&
  timeout 250 ninja -C build-dev -j12 test_gpu test_cuda tessel_cli; } > "$OUT/build.log" 2>&1 || { grep -E -A3 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
wait
echo "built at $SECONDS s"; tail -1 $OUT/bbuild.log
(cd build-dev && timeout 200 ctest -L 'cuda|gpu' -j4 --output-on-failure) > $OUT/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"
grep -E "tests passed|tests failed|Failed|\*\*\*|Timeout" $OUT/tests.log | grep -v Skipped | tail -12
A=1024x5000x3000,1056x2296x2008,1104x5368x4440,1184x3304x2504,1240x2312x3184,1256x4472x3888,1264x4352x1264,1288x3088x1848,1304x1856x4816,1376x2944x2352,1376x5936x3288,1392x2120x2408,1424x2888x3336,1432x2576x2616,1456x4024x1032,1496x2896x1920,1520x3232x1728,1528x3568x1176,1544x1384x1384,1544x5352x1848,1560x1592x4824,1576x1952x1464,1664x1856x1120,1672x2744x3488,1696x2696x2432,1720x2608x1104,1752x3816x1992,1768x1440x4408,1792x2048x4360,1800x1800x4096,1872x1472x5312,1880x1344x3856,1920x1384x1424,1976x1408x1632,2000x1368x1200,2080x3336x2072,2144x1744x4192,2256x2792x4976,2280x4936x1280,2344x1464x4376,2368x1576x5776,2392x5416x2048,2416x1240x1096,2512x1856x1360,2536x5784x3296,2560x4192x2680,2656x2200x1144
B=2656x3256x1408,2680x1336x1728,2768x2808x1024,2816x4416x2272,2856x2984x5264,2856x4160x1536,2872x1248x4872,2920x1920x3832,2952x2192x3304,3008x5384x2632,3216x2496x3488,3240x3608x2216,3248x1152x1448,3272x5608x3840,3352x5768x4296,3440x3728x1040,3456x2984x5496,3496x5024x2320,3560x2504x4624,3576x3440x1448,3592x2944x1416,3592x5680x1032,3680x2272x1384,3688x2056x1848,3752x4488x1632,4064x1512x2056,4168x1400x2304,4168x2280x1272,4208x1696x1168,4224x5104x2648,4256x3520x3808,4272x1720x2880,4312x4800x1800,4320x2136x2488,4408x1416x4232,4664x4448x2872,4696x2040x3456,4696x3520x5936,4824x3552x5160,4944x2328x4288,5112x1800x4496,5312x4952x1448,5360x1664x1280,5432x3776x4632,5536x3664x5000,5600x1712x5520,6112x3504x2632
V=5784x1128x4928,2480x6120x2864,4152x5480x3984,2328x4064x2608,4320x3184x3000,4560x2520x1528,4520x2096x5040,1184x4168x5040,4264x4808x3344,2048x5528x2416,4264x5920x1480,5544x5680x2304,3624x1232x4112,5880x3168x4936,3416x4728x2376,2504x1744x1768,3560x2928x3232,6112x1928x1576,4064x1120x5440,4520x4008x1312,5480x4552x1096,2176x2456x1952,1360x1688x1440,1264x4248x2784,2712x4152x1888,1288x2392x3208,4848x4888x4992,2392x2864x2704,2560x3736x4240,6112x5520x1592
timeout 90 /tmp/bgc-new --dtypes bf16,fp16,tf32,fp32 --shapes 4096x4096x4096,8192x8192x8192 > $OUT/squares.txt 2>&1
echo "squares rc=$? at $SECONDS s"
for S in A B V; do
  [ $SECONDS -gt 560 ] && { echo "time up before $S"; break; }
  timeout 60 /tmp/bgc-new --dtypes bf16,fp16 --shapes ${!S} > $OUT/class-$S.txt 2>&1; echo "$S rc=$? at $SECONDS s"
done
echo "== squares (dtype shape dev-x)"; tail -n +3 $OUT/squares.txt | awk '{print $1, $2, $8}' | paste -sd' '
for S in A B V; do [ -f $OUT/class-$S.txt ] && tail -n +3 $OUT/class-$S.txt | awk -v s=$S '{n[$1]++; if ($8 < 0.75) {u[$1]++; w[$1] = w[$1] " " $2 "=" $8}} END {for (d in n) print s, d, u[d]+0 " of " n[d] " under 0.75:" w[d]}'; done

#!/bin/bash
# On the GPU machine (the `run` tool): builds this tree with plain g++ (no CMake
# packages needed there; GoogleTest and nlohmann-json travel as Debian packages in
# .deb/), and optionally a reference tree of an earlier commit, then runs the steps
# asked for. Results go under $OUT, a short summary last.
#   mkdir -p .deb && (cd .deb && apt-get download googletest nlohmann-json3-dev)   # here, once
#   REF=/path/to/old/tree STEPS="tests sanitize bench-gpu bench-cpu fuzz" scripts/device_check.sh
# REUSE=1 keeps the binaries an earlier call left in /tmp on a warm machine.
# Steps:
#   tests      the gpu and cuda test binaries (tests/gpu, tests/cuda): gpu-tests.txt, cuda-tests.txt
#   attention  kernels/attention*.tir on the cuda target at a ragged size, --check
#   sanitize   compute-sanitizer memcheck, racecheck and synccheck over a few GPU
#              tests (sanitizer.txt: the summary line of each tool)
#   hopper     the tma-pipeline pass's GPU tests, --check runs and `tessel bench` of
#              its plans beside cuBLAS (hopper.txt, hopper-bench.md)
#   bench-gpu  `tessel bench` of tessel-cuda and cuBLAS with REF's executable as the
#              reference, on the seed shapes (bench-gpu.md)
#   bench-cpu  the same on the cpu with one thread (bench-cpu.md); with BENCH_CPU_THREADS
#              set, thread scaling beside OpenBLAS (see the step)
#   attention-cpu  kernels/attention*.tir on the cpu (all cores) beside PyTorch's CPU SDPA
#   attention-gpu  bf16/f16 kernels/attention*.tir on the cuda target: --check runs
#              (attention-gpu-check.txt), then the attention issue's shapes, device time
#              beside PyTorch's bf16 SDPA backends (attention-gpu.md, attention-gpu.jsonl)
#   python     the Python package from carried wheels (PYWHEELS): pytest and the
#              call-overhead benchmark (python.txt, python-bench.txt)
#   ops-cpu    softmax and layernorm on the cpu beside NumPy (scripts/bench_ops_cpu.sh; ops-cpu.md)
#   planner-cuda  the planner's calibration and held-out regret on the GPU, bf16 GEMM and
#              softmax (scripts/planner_cuda.sh: about 5-6 minutes; planner-cuda/ and
#              planner-cuda.txt)
#   fuzz       the differential fuzzer's plain mode on every core but two for
#              FUZZ_SECONDS (default 240) each (fuzz.txt); process i starts at seed
#              FUZZ_SEED_BASE + i * 1000000 (default base 5000000: pass a new base
#              to try new programs)
set -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-/tmp/tessel-out}
DEB=${DEB:-$ROOT/.deb}
STEPS=${STEPS-tests}  # STEPS="" builds only
mkdir -p "$OUT" /tmp/pk
for f in "$DEB"/*.deb; do dpkg -x "$f" /tmp/pk; done
GT=/tmp/pk/usr/src/googletest/googletest
export PATH=/usr/local/cuda/bin:$PATH TESSEL_CACHE_DIR=/tmp/tessel-cache
CORES=$(nproc)

# build SRC OBJ: the library (all of src/), the CLI and, for this tree, the GPU
# tests and the differential fuzzer, into OBJ.
build() {
  local src=$1 o=$2
  [ -n "$REUSE" ] && [ -x "$o/tessel" ] && return 0  # REUSE=1: a warm machine's earlier build
  mkdir -p "$o"
  local cxx="g++ -std=c++20 -O2 -DTESSEL_WITH_CUDA=1 -DTESSEL_SOURCE_DIR=\"$src\" -I$src/src -I$src/include -I/tmp/pk/usr/include -I/usr/local/cuda/include"
  (cd "$src" && find src tools -name "*.cpp") |
    xargs -P "$CORES" -I{} sh -c "cd $src && $cxx -c {} -o $o/\$(echo {} | tr / _).o" || return 1
  local libs="-L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread"
  g++ -o "$o/tessel" "$o"/tools_*.o "$o"/src_*.o $libs || return 1
  [ "$src" = "$ROOT" ] || return 0
  g++ -std=c++17 -O1 -I$GT/include -I$GT -c $GT/src/gtest-all.cc -o "$o/gtest-all.o" &
  g++ -std=c++17 -O1 -I$GT/include -c $GT/src/gtest_main.cc -o "$o/gtest_main.o" &
  for t in tests/gpu/*.cpp tests/cuda/*.cpp; do
    $cxx -DTESSEL_CLI=\"$o/tessel\" -I$GT/include -Itests -c $t -o "$o/test_$(echo $t | tr / _).o" &
  done
  $cxx -I$GT/include -Itests -DTESSEL_DIFFFUZZ_MAIN=1 -c fuzz/fuzz_differential.cpp -o "$o/difffuzz.o" &
  $cxx -c bench/bench_ops_cpu.cpp -o "$o/bench_ops_cpu.o" &
  wait
  for t in tests/gpu/*.cpp tests/cuda/*.cpp; do  # a unit that did not compile is an error, not fewer tests
    [ -f "$o/test_$(echo $t | tr / _).o" ] || { echo "error: $t did not compile"; return 1; }
  done
  g++ -o "$o/bench_ops_cpu" "$o/bench_ops_cpu.o" "$o"/src_*.o $libs || return 1
  g++ -o "$o/gpu_tests" "$o"/test_tests_gpu_*.o "$o"/src_*.o "$o/gtest-all.o" "$o/gtest_main.o" $libs &&
    g++ -o "$o/cuda_tests" "$o"/test_tests_cuda_*.o "$o"/src_*.o "$o/gtest-all.o" "$o/gtest_main.o" $libs &&
    g++ -o "$o/difffuzz" "$o/difffuzz.o" "$o"/src_*.o $libs
}

O=/tmp/o-cur
build "$ROOT" $O > "$OUT/build.log" 2>&1 || { grep -E -A3 "error" "$OUT/build.log" | head -40; exit 1; }
if [ -n "$REF" ]; then
  build "$REF" /tmp/o-ref >> "$OUT/build.log" 2>&1 || { echo "reference build FAILED"; tail -20 "$OUT/build.log"; exit 1; }
fi
echo "built at $SECONDS s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/summary.txt" 2>&1

for step in $STEPS; do
  case $step in
    tests)
      # The two binaries run at once: most of their time is NVRTC on the host's cores.
      (timeout ${GPU_TESTS_TIMEOUT:-400} $O/gpu_tests --gtest_brief=1 > "$OUT/gpu-tests.txt" 2>&1
       echo "gpu tests rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu-tests.txt" | tr '\n' ' ')" > /tmp/sum-gpu.txt) &
      (cd tests/cuda && timeout ${CUDA_TESTS_TIMEOUT:-400} $O/cuda_tests --gtest_brief=1) > "$OUT/cuda-tests.txt" 2>&1
      echo "cuda tests rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/cuda-tests.txt" | tr '\n' ' ')" > /tmp/sum-cuda.txt
      wait
      cat /tmp/sum-gpu.txt /tmp/sum-cuda.txt >> "$OUT/summary.txt";;
    attention)
      # fp32 on the fma atom (the default cuda plan), checked against the FP64 evaluator.
      for k in attention attention_causal; do
        timeout 120 $O/tessel run kernels/$k.tir --target cuda --check --size B=2 --size Hq=8 --size Hkv=2 \
          --size Sq=1000 --size Skv=777 --size D=64 --scalar scale=0.125 >> "$OUT/attention.txt" 2>&1
        echo "attention $k rc=$? at $SECONDS s: $(grep -E 'rel_err|error' "$OUT/attention.txt" | tail -1)" >> "$OUT/summary.txt"
      done;;
    sanitize)
      # Small shapes: the tools run kernels hundreds of times slower.
      filter='CudaOps.EveryProgramMatchesTheFp64Oracle:CudaLibrary.*:CudaGemm.BetaAlphaAndMisalignedRows:CudaGemm.RowsOnFourBytesCopyAsynchronously:CudaGemm.HostArraysRoundTrip'
      # The six runs go at once (each process has its own context); reports follow in order.
      for tool in memcheck racecheck synccheck; do
        for bin in gpu_tests cuda_tests; do
          f=$filter; [ $bin = cuda_tests ] && f='TmaGpu.*:TmaPipelineGpu.SmallShapes*:TmaPipelineGpu.FusedSplitK*'
          ((cd tests/cuda && timeout 300 compute-sanitizer --tool $tool --error-exitcode 3 $O/$bin \
            --gtest_filter="$f") > "/tmp/san-$tool-$bin.txt" 2>&1; echo $? > "/tmp/san-$tool-$bin.rc") &
        done
      done
      wait
      for tool in memcheck racecheck synccheck; do
        for bin in gpu_tests cuda_tests; do
          f=$filter; [ $bin = cuda_tests ] && f='TmaGpu.*:TmaPipelineGpu.SmallShapes*:TmaPipelineGpu.FusedSplitK*'
          echo "compute-sanitizer $tool $bin ($f) rc=$(cat /tmp/san-$tool-$bin.rc): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' /tmp/san-$tool-$bin.txt | tr '\n' ' ')" | tee -a "$OUT/sanitizer.txt" >> "$OUT/summary.txt"
          grep -E "^\[ RUN|^=========" "/tmp/san-$tool-$bin.txt" | grep -B1 "^=========" | head -40 >> "$OUT/sanitizer.txt"
        done
      done
      echo "sanitizers done at $SECONDS s" >> "$OUT/summary.txt";;
    hopper)
      # The tma-pipeline pass on the H200: ragged --check runs of its plans (20 s each:
      # a hang shows as rc=124), its GPU tests (without the every-variant test when
      # a variant hung), then tessel bench beside cuBLAS for the default plan and
      # HOPPER_PLANS (space-separated --plan specs) on HOPPER_SHAPES, dtype
      # HOPPER_DTYPE. HOPPER_NCU=1 adds an Nsight Compute profile of the first plan.
      hung=0
      for args in "1000 1000 1000 --atom wgmma --tile 256x128x64 --workers 4 --window 4 --copy tma --producers 1" \
                  "1000 1000 1000 --atom wgmma --tile 128x128x64 --workers 2 --window 4 --copy tma --producers 1" \
                  "2049 1023 257 --atom wgmma --tile 128x256x64 --workers 2 --window 4 --copy tma --producers 1 --persistent 132 --tile-band 8" \
                  "16 4096 4096 --atom wgmma --tile 64x256x64 --workers 1 --window 4 --copy tma --producers 1"; do
        timeout 20 $O/tessel gemm $args --target cuda --dtype bf16 --check > /tmp/hg.txt 2>&1
        rc=$?; [ $rc = 124 ] && hung=1
        echo "tessel gemm $args: rc=$rc $(grep -E -i 'rel|error|ok' /tmp/hg.txt | tail -1)" >> "$OUT/hopper.txt"
      done
      f='TmaPipeline*:TmaCompile.*:TmaGpu.*'; [ $hung = 1 ] && f="$f:-TmaPipelineGpu.EveryVariant*"
      (cd tests/cuda && timeout 300 $O/cuda_tests --gtest_filter="$f") >> "$OUT/hopper.txt" 2>&1
      echo "hopper tests ($f) rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/hopper.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
      S=${HOPPER_SHAPES:-4096x4096x4096,8192x8192x8192,1000x1000x1000,16x4096x4096,1536x1536x6144,4096x4096x256}
      P1=${HOPPER_PLANS:-atom=wgmma,tile=128x256x64,workers=2,window=4,copy=tma,producers=1}
      if [ -n "$HOPPER_NCU" ] && command -v ncu > /dev/null; then
        a=$(echo "${P1%% *}" | sed -e 's/atom=/--atom /;s/,tile=/ --tile /;s/,workers=/ --workers /;s/,window=/ --window /;s/,copy=/ --copy /;s/,producers=/ --producers /;s/,persistent=/ --persistent /;s/,band=/ --tile-band /')
        timeout 120 ncu --section SpeedOfLight --section WarpStateStats --section Occupancy -k tessel_kernel -c 1 \
          $O/tessel gemm 4096 4096 4096 --target cuda --dtype bf16 $a > "$OUT/hopper-ncu.txt" 2>&1
        echo "ncu rc=$? at $SECONDS s" >> "$OUT/summary.txt"
      fi
      i=0
      for plan in default ${HOPPER_PLANS-$P1}; do  # HOPPER_PLANS="": the default plan alone
        i=$((i + 1)); extra=(); [ "$plan" = default ] || extra=(--plan "$plan")
        timeout ${HOPPER_BENCH_TIMEOUT:-150} $O/tessel bench --out /tmp/bh-$i --impl tessel-cuda,cublas --dtype ${HOPPER_DTYPE:-bf16} \
          --shapes "$S" --rounds 2 $HOPPER_BENCH_ARGS "${extra[@]}" > /tmp/bh-$i.log 2>&1
        echo "hopper bench [$plan] rc=$? at $SECONDS s" >> "$OUT/summary.txt"
        { echo "## plan: $plan"; cat /tmp/bh-$i/results.md 2>/dev/null || tail -5 /tmp/bh-$i.log; } >> "$OUT/hopper-bench.md"
      done;;
    bench-gpu)
      timeout 280 $O/tessel bench --impl tessel-cuda,cublas --reference /tmp/o-ref/tessel --rounds 2 \
        --out /tmp/bench-gpu > /tmp/bench-gpu.log 2>&1
      echo "bench-gpu rc=$? at $SECONDS s" >> "$OUT/summary.txt"
      cp /tmp/bench-gpu/results.md "$OUT/bench-gpu.md" 2>/dev/null || tail -5 /tmp/bench-gpu.log >> "$OUT/summary.txt";;
    bench-cpu)
      if [ -z "$BENCH_CPU_THREADS" ]; then
      env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE timeout 200 $O/tessel bench --impl tessel \
        --reference /tmp/o-ref/tessel --rounds 2 --out /tmp/bench-cpu > /tmp/bench-cpu.log 2>&1
      echo "bench-cpu rc=$? at $SECONDS s" >> "$OUT/summary.txt"
      cp /tmp/bench-cpu/results.md "$OUT/bench-cpu.md" 2>/dev/null || tail -5 /tmp/bench-cpu.log >> "$OUT/summary.txt"
      else
      # Thread scaling: BENCH_CPU_THREADS="1 2 16" runs one bench per count, the counts
      # interleaved over BENCH_CPU_ROUNDS rounds (default 2), each with --impl
      # BENCH_CPU_IMPLS (default tessel,openblas), REF's executable as the reference
      # when REF is set, and BENCH_CPU_ARGS (e.g. "--shapes 512x512x512,1024x1024x1024
      # --rounds 2") appended: bench-cpu-t<N>-r<R>.md, a line per run in the summary.
      for r in $(seq 1 "${BENCH_CPU_ROUNDS:-2}"); do for t in $BENCH_CPU_THREADS; do
        d=/tmp/bench-cpu-t$t-r$r; rm -rf $d
        # OpenBLAS from a carried .deb (apt-get download libopenblas0-pthread libgfortran5) when the host has none.
        LD_LIBRARY_PATH=/tmp/pk/usr/lib/x86_64-linux-gnu/openblas-pthread:/tmp/pk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE timeout 300 $O/tessel bench \
          --impl "${BENCH_CPU_IMPLS:-tessel,openblas}" ${REF:+--reference /tmp/o-ref/tessel} \
          --threads $t $BENCH_CPU_ARGS --out $d > $d.log 2>&1
        echo "bench-cpu threads $t round $r rc=$? at $SECONDS s, load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/summary.txt"
        cp $d/results.md "$OUT/bench-cpu-t$t-r$r.md" 2>/dev/null || tail -5 $d.log >> "$OUT/summary.txt"
      done; done
      fi;;
    attention-cpu)
      # fp32 on the cpu, every core, beside PyTorch's CPU scaled_dot_product_attention.
      for d in 64 128; do for k in attention attention_causal; do
        timeout 120 $O/tessel run kernels/$k.tir --target cpu --repeat 5 --json --size B=1 --size Hq=8 --size Hkv=8 \
          --size Sq=2048 --size Skv=2048 --size D=$d --scalar scale=0.125 >> /tmp/attn-cpu.jsonl 2>&1
      done; done
      PYTHONUNBUFFERED=1 timeout 120 python3 - /tmp/attn-cpu.jsonl > "$OUT/attention-cpu.md" 2>&1 <<'PY'
import json, sys, time, torch
print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
print("| kernel | B x H x S x D | tessel ms | torch ms | tessel speedup (torch ms / tessel ms) |")
print("|---|---|---:|---:|---:|")
for line in open(sys.argv[1]):
    if not line.startswith("{"): print(line.strip()); continue
    r = json.loads(line); s = r["sizes"]; causal = r["kernel"].endswith("causal")
    q = torch.randn(1, s["Hq"], s["Sq"], s["D"]); k = torch.randn(1, s["Hkv"], s["Skv"], s["D"]); v = torch.randn_like(k)
    f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.125)
    f(); ts = []
    for _ in range(5):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    t = sorted(ts)[2] * 1e3; mine = r["warm_us"] / 1e3
    print(f"| {r['kernel']} | 1x{s['Hq']}x{s['Sq']}x{s['D']} | {mine:.2f} | {t:.2f} | {t / mine:.2f} |")
PY
      echo "attention-cpu rc=$? at $SECONDS s" >> "$OUT/summary.txt";;
    attention-gpu)
      # bf16 and f16 attention on the H200 (kernels/attention*_{bf16,f16}.tir with the default
      # cuda plan: the mma.sync atom, 4 warps along the query rows). First one --check run per
      # kernel and head_dim at a ragged GQA shape (O NaN-poisoned, the complete O against the
      # FP64 evaluator), then the issue's shapes: device time of warm launches (--repeat,
      # tensors in device memory, CUDA events) beside PyTorch's bf16
      # scaled_dot_product_attention with each backend, in the same device call. TFLOP/s
      # count 4*B*H*Sq*Skv*D, halved for causal.
      rm -f /tmp/attn-gpu.jsonl "$OUT/attention-gpu-check.txt"
      # The attention GPU tests alone (they are in the tests step's gpu_tests too), so that
      # their results come back even if that step's time runs out.
      # ATTN_GPU_TESTS=0 skips them, ATTN_CHECK_KERNELS narrows the --check runs and
      # ATTN_WIDE_PLAN="" leaves out the second plan (a short device budget).
      if [ "${ATTN_GPU_TESTS:-1}" != 0 ]; then
        timeout 400 $O/gpu_tests --gtest_filter='*AttentionGpu*' > "$OUT/attention-gpu-tests.txt" 2>&1
        echo "attention gpu tests rc=$? at $SECONDS s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/attention-gpu-tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
      fi
      for k in ${ATTN_CHECK_KERNELS:-attention_bf16 attention_causal_bf16 attention_f16 attention_causal_f16}; do
        for d in 64 128; do
          timeout 120 $O/tessel run kernels/$k.tir --target cuda --check --size B=2 --size Hq=8 --size Hkv=2 \
            --size Sq=1000 --size Skv=777 --size D=$d >> "$OUT/attention-gpu-check.txt" 2>&1
          echo "attention-gpu check $k D=$d rc=$? at $SECONDS s: $(tail -1 "$OUT/attention-gpu-check.txt")" >> "$OUT/summary.txt"
        done
      done
      for shape in 4x16x4096x64 4x16x4096x128 16x16x1024x64; do
        IFS=x read -r b h s d <<< "$shape"
        for k in attention_bf16 attention_causal_bf16; do
          # The default plan (128 query rows over 4 warps from Sq = 128), then 128 rows over 8 warps.
          wide=${ATTN_WIDE_PLAN-"--tile BM=128 --workers 8 --window 2 --copy async"}
          plans=(""); [ -n "$wide" ] && plans+=("$wide")
          for plan in "${plans[@]}"; do
            timeout 120 $O/tessel run kernels/$k.tir --target cuda --repeat 10 --json --size B=$b --size Hq=$h \
              --size Hkv=$h --size Sq=$s --size Skv=$s --size D=$d --scalar scale=0.125 $plan >> /tmp/attn-gpu.jsonl 2>&1
          done
        done
      done
      cp /tmp/attn-gpu.jsonl "$OUT/attention-gpu.jsonl"
      PYTHONUNBUFFERED=1 timeout 200 python3 - /tmp/attn-gpu.jsonl > "$OUT/attention-gpu.md" 2>&1 <<'PY'
import json, sys, torch
from torch.nn.attention import sdpa_kernel, SDPBackend
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
print("| kernel | B x H x S x D | plan | tessel dev ms | tessel TFLOP/s | " +
      " | ".join(f"{n} TFLOP/s | tessel / {n}" for n, _ in backends) + " |")
print("|---|---|---|---:|---:|" + "---:|---:|" * len(backends))
def device_ms(f):
    f(); torch.cuda.synchronize()
    ts = []
    for _ in range(7):
        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); z.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(z))
    return sorted(ts)[3]
for line in open(sys.argv[1]):
    if not line.startswith("{"): print(line.strip()); continue
    r = json.loads(line); s = r["sizes"]; causal = "causal" in r["kernel"]
    flop = 4 * s["B"] * s["Hq"] * s["Sq"] * s["Skv"] * s["D"] / (2 if causal else 1)
    mine = (r["device_us"] or r["warm_us"]) / 1e3
    q = torch.randn(s["B"], s["Hq"], s["Sq"], s["D"], device="cuda", dtype=torch.bfloat16)
    k = torch.randn(s["B"], s["Hkv"], s["Skv"], s["D"], device="cuda", dtype=torch.bfloat16); v = torch.randn_like(k)
    cells = []
    for name, backend in backends:
        try:
            with sdpa_kernel(backend):
                t = device_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.125))
            cells += [f"{flop / t / 1e9:.0f}", f"{t / mine:.3f}"]
        except Exception as e:
            cells += [f"n/a ({type(e).__name__})", "-"]
    print(f"| {r['kernel']} | {s['B']}x{s['Hq']}x{s['Sq']}x{s['D']} | {r['plan']} | {mine:.3f} | {flop / mine / 1e9:.1f} | " + " | ".join(cells) + " |")
PY
      echo "attention-gpu rc=$? at $SECONDS s" >> "$OUT/summary.txt"
      cat "$OUT/attention-gpu.md" >> "$OUT/summary.txt";;
    python)
      # The Python package: pip-installed from the wheels in PYWHEELS (no package
      # registry here; download them into build-pywheels/ and carry it:
      #   pip download --only-binary=:all: --python-version 3.12 --implementation cp \
      #     --platform manylinux_2_28_x86_64 --platform any -d build-pywheels \
      #     nanobind scikit-build-core pytest numpy
      # ), then its pytest suite (the PyTorch and CUDA tests run here) and the
      # call-overhead benchmark.
      W=${PYWHEELS:-$ROOT/build-pywheels}
      { python3 -m venv --system-site-packages /tmp/tv &&
        /tmp/tv/bin/pip install -q --no-index --find-links "$W" nanobind scikit-build-core pytest numpy &&
        CMAKE_PREFIX_PATH=/tmp/pk/usr CMAKE_BUILD_PARALLEL_LEVEL=$CORES /tmp/tv/bin/pip install -q --no-index --find-links "$W" \
          --no-build-isolation . ; } > /tmp/pip.log 2>&1
      echo "python install rc=$? at $SECONDS s" >> "$OUT/summary.txt"
      tail -5 /tmp/pip.log > "$OUT/python.txt"
      # The tests and the benchmark run on the machine's python3 (the one with PyTorch,
      # which a venv does not see) with the venv's packages on its path.
      SP=$(/tmp/tv/bin/python -c 'import site; print(site.getsitepackages()[0])')
      (cd /tmp && PYTHONPATH=$SP python3 -c "import time; t = time.perf_counter(); import tessel; print(f'import tessel: {(time.perf_counter() - t) * 1e3:.1f} ms')") >> "$OUT/python.txt" 2>&1
      PYTHONPATH=$SP timeout 300 python3 -X faulthandler -m pytest -q -rs -p no:cacheprovider tests/python >> "$OUT/python.txt" 2>&1
      echo "pytest rc=$? at $SECONDS s: $(tail -1 "$OUT/python.txt")" >> "$OUT/summary.txt"
      PYTHONPATH=$SP timeout 200 python3 bench/python/bench_overhead.py > "$OUT/python-bench.txt" 2>&1
      echo "python bench rc=$? at $SECONDS s" >> "$OUT/summary.txt";;
    ops-cpu)
      BENCH_OPS_CPU=$O/bench_ops_cpu timeout 200 scripts/bench_ops_cpu.sh --threads 1 > "$OUT/ops-cpu.md" 2>&1
      echo "ops-cpu rc=$? at $SECONDS s" >> "$OUT/summary.txt";;
    fuzz)
      n=$((CORES > 4 ? CORES - 2 : 2))
      for i in $(seq 0 $((n - 1))); do
        start=$((${FUZZ_SEED_BASE:-5000000} + i * 1000000))
        TESSEL_CACHE_DIR=/tmp/fuzz-cache-$i timeout $((${FUZZ_SECONDS:-240} + 30)) $O/difffuzz \
          --seeds $start: --plans 2 --seconds ${FUZZ_SECONDS:-240} --log-every 1000000 --out /tmp/fuzz-fail-$i \
          > /tmp/fuzz-$i.txt 2>&1 &
      done
      wait
      tail -n 3 /tmp/fuzz-*.txt > "$OUT/fuzz.txt"
      echo "fuzz: $n processes x ${FUZZ_SECONDS:-240} s at $SECONDS s" >> "$OUT/summary.txt"
      cat /tmp/fuzz-fail-*/* 2>/dev/null | head -100 >> "$OUT/fuzz.txt";;
    planner-cuda)
      TESSEL=$O/tessel OUT=$OUT bash scripts/planner_cuda.sh 2>&1 | tee "$OUT/planner-cuda.txt" |
        grep -E --line-buffered "^== |regret|Kendall|suite total|failed the FP64|budget|measured in|FAILED"
      echo "planner-cuda rc=$? at $SECONDS s: $(grep -h "regret of the planner" "$OUT"/planner-cuda/heldout-*.log | tr '\n' ' ')" >> "$OUT/summary.txt"
      # One archive: the run tool returns a bounded number of files.
      tar czf "$OUT/planner-cuda.tgz" -C "$OUT" planner-cuda && rm -rf "$OUT/planner-cuda";;
  esac
done
cat "$OUT/summary.txt"

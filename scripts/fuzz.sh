#!/usr/bin/env bash
# Fuzzes with libFuzzer, one core, niced, SECONDS per fuzzer (default 30):
#   - the textual TileIR and GroupIR parsers and verifiers (fuzz/fuzz_{tile,group}_text.cpp);
#   - the differential fuzzer (fuzz/fuzz_differential.cpp, ASan + UBSan): random
#     kernels and plans on sim, cpu and the FP64 evaluator, every pass output
#     re-verified and re-simulated;
#   - then the differential fuzzer's plain mode (tessel_difffuzz_asan: a loop over
#     seeds, still ASan + UBSan), going on from the seed where the last run stopped
#     (build-fuzz/difffuzz-next-seed). For long runs without the sanitizers, the
#     normal build's tessel_difffuzz takes the same arguments.
# A finding stops a libFuzzer run with the crashing input saved as build-fuzz/crash-*
# or build-fuzz/timeout-*; reproduce it with
#   build-fuzz/fuzz_tile_text build-fuzz/crash-...
# The plain mode prints a failing kernel's text, plan and the command that reruns it
# (tessel_difffuzz --seeds S:S+1), and saves it as build-fuzz/difffuzz-failures/*.
# The corpora grow in build-fuzz/corpus-{tile,group,diff}, seeded from fuzz/seeds/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
# clang 16: clang 14 cannot compile libstdc++ 12's <source_location>.
scripts/deps.sh clang-16 libclang-rt-16-dev
# No cuda target: the fuzzers run sim and cpu.
cmake -G Ninja -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-16 -DTESSEL_FUZZ=ON -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null
ninja -C build-fuzz fuzz_tile_text fuzz_group_text fuzz_differential tessel_difffuzz_asan
for ir in tile group; do
  corpus="build-fuzz/corpus-$ir"
  mkdir -p "$corpus"
  echo "fuzzing the ${ir} IR for ${seconds} s" >&2
  # -timeout: a parse taking 5 s is a hang; -rss_limit_mb: unbounded memory.
  (cd build-fuzz && nice -n 10 "./fuzz_${ir}_text" "corpus-$ir" "../fuzz/seeds/$ir" \
    -dict=../fuzz/ir.dict -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 2>&1 | grep -v -E "^#[0-9]+\s+(NEW|REDUCE|pulse|RELOAD)")
done

# The differential fuzzer compiles kernels with the cpu target. Its cache stays in
# build-fuzz/kernel-cache, so that replaying the corpus (before libFuzzer's clock
# starts) does not compile every kernel again.
TESSEL_CACHE_DIR="$PWD/build-fuzz/kernel-cache"
export TESSEL_CACHE_DIR
mkdir -p -m 700 "$TESSEL_CACHE_DIR"
corpus=build-fuzz/corpus-diff
mkdir -p "$corpus"
echo "differential fuzzing (libFuzzer, ASan + UBSan) for ${seconds} s" >&2
# An input is 14 bytes (kernel seed, plan): fuzz/fuzz_differential.cpp. -timeout:
# one program compiles and runs in about a second; a minute is a hang.
(cd build-fuzz && nice -n 10 ./fuzz_differential corpus-diff ../fuzz/seeds/diff \
  -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -max_len=64 \
  -print_final_stats=1 2>&1 | grep -v -E "^#[0-9]+\s+(NEW|REDUCE|pulse|RELOAD)")
echo "differential fuzzing (plain mode) for ${seconds} s" >&2
nice -n 10 build-fuzz/tessel_difffuzz_asan --seeds 1000000: \
  --resume build-fuzz/difffuzz-next-seed \
  --seconds "$seconds" --plans 2 --log-every 1000 --out build-fuzz/difffuzz-failures

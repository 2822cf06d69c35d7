#!/usr/bin/env bash
# Fuzzes the textual TileIR and GroupIR parsers and verifiers with libFuzzer
# (fuzz/fuzz_*.cpp): SECONDS per parser (default 30, so 60 s in all), one core,
# niced. A finding stops the run with the crashing input saved as
# build-fuzz/crash-* or build-fuzz/timeout-*; reproduce it with
#   build-fuzz/fuzz_tile_text build-fuzz/crash-...
# The corpora grow in build-fuzz/corpus-{tile,group}, seeded from fuzz/seeds/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
# clang 16: clang 14 cannot compile libstdc++ 12's <source_location>.
scripts/deps.sh clang-16 libclang-rt-16-dev
cmake -G Ninja -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-16 -DTESSEL_FUZZ=ON >/dev/null
ninja -C build-fuzz fuzz_tile_text fuzz_group_text
for ir in tile group; do
  corpus="build-fuzz/corpus-$ir"
  mkdir -p "$corpus"
  echo "fuzzing the ${ir} IR for ${seconds} s" >&2
  # -timeout: a parse taking 5 s is a hang; -rss_limit_mb: unbounded memory.
  (cd build-fuzz && nice -n 10 "./fuzz_${ir}_text" "corpus-$ir" "../fuzz/seeds/$ir" \
    -dict=../fuzz/ir.dict -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 2>&1 | grep -v -E "^#[0-9]+\s+(NEW|REDUCE|pulse|RELOAD)")
done

#!/usr/bin/env bash
# Builds tessel and runs every test (what CI runs, through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
# A fresh kernel cache: tests must not depend on what an earlier run compiled.
export TESSEL_CACHE_DIR="$(mktemp -d /tmp/tessel-test-cache-XXXXXX)"
trap 'rm -rf "$TESSEL_CACHE_DIR"' EXIT
ctest --test-dir build --output-on-failure -j 2 "$@"

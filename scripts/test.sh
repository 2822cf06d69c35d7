#!/usr/bin/env bash
# Builds tessel and runs every test (what CI runs, through .ci/run); then builds a
# second tree with ASan + UBSan (TESSEL_SANITIZE=ON: the library, the tests, the
# CLI and the kernels the cpu target compiles at run time) and runs every test
# there too, where the first report fails the test. TESSEL_SANITIZE_TESTS=0 skips that.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
# A fresh kernel cache: tests must not depend on what an earlier run compiled.
export TESSEL_CACHE_DIR="$(mktemp -d /tmp/tessel-test-cache-XXXXXX)"
trap 'rm -rf "$TESSEL_CACHE_DIR"' EXIT
ctest --test-dir build --output-on-failure -j 2 "$@"

# The Python package (pyproject.toml, docs/python.md): `pip install .` into a venv under
# build/ (Debian's python3 and NumPy; nanobind, scikit-build-core and pytest from PyPI;
# its CMake tree build/python/ is kept, so a second run rebuilds only what changed),
# then pytest; -rs lists what skipped and why (PyTorch, a GPU). TESSEL_PYTHON_TESTS=0 skips.
if [ "${TESSEL_PYTHON_TESTS:-1}" != 0 ]; then
  [ -x build/python-venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages build/python-venv
  build/python-venv/bin/pip install -q nanobind scikit-build-core pytest
  build/python-venv/bin/pip install -q --no-build-isolation .
  PYTHONDONTWRITEBYTECODE=1 build/python-venv/bin/python -m pytest -q -rs -p no:cacheprovider tests/python
fi

[ "${TESSEL_SANITIZE_TESTS:-1}" = 0 ] && exit 0
# The whole suite again, sanitized. The cuda target is left out of this tree (no GPU
# here, and its driver and ASan's shadow memory do not mix), so its tests skip there
# as they do here without a GPU. The property shards run the first 20 of their 125
# kernels each: a sanitized compile of a kernel costs seconds.
# -O1 -g1: half the compile time of -O2 -g, and reports still name file and line.
cmake -G Ninja -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null
ninja -C build-asan
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
TESSEL_PROPERTY_PER_SHARD=20 ctest --test-dir build-asan --output-on-failure -j 2 "$@"

#!/bin/sh
# netlib_tester.sh TESTER LIBRARY DIR: runs one of the netlib Level-3 BLAS testers from
# Debian's libblas-test, installed in DIR (xblat3s, xblat3d: Fortran sgemm_/dgemm_; xscblat3,
# xdcblat3: cblas_sgemm/cblas_dgemm) on its own input file, with LIBRARY preloaded,
# error exits included. Passes when the tester reports its GEMM passed the
# computational tests (the CBLAS testers: column- and row-major) and the error exits,
# reports no failure anywhere, and LD_DEBUG=bindings shows the tester's GEMM calls
# bound to LIBRARY. The other routines come from the reference BLAS of the same
# package directory (the CBLAS testers need its RowMajorStrg, which OpenBLAS's
# libblas.so.3 lacks), so the result does not depend on the libblas.so.3 alternative.
set -eu
tester=$1
lib=$2
dir=$3
if [ ! -x "$dir/$tester" ]; then
  echo "netlib_tester.sh: $tester not found: install Debian's libblas-test (scripts/deps.sh)" >&2
  exit 1
fi
case $tester in
  xblat3s) input=sblat3.in; routine=SGEMM; symbol=sgemm_ ;;
  xblat3d) input=dblat3.in; routine=DGEMM; symbol=dgemm_ ;;
  xscblat3) input=sin3; routine=cblas_sgemm; symbol=cblas_sgemm ;;
  xdcblat3) input=din3; routine=cblas_dgemm; symbol=cblas_dgemm ;;
  *) echo "netlib_tester.sh: unknown tester $tester" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
status=0
# A sanitized library (TESSEL_SANITIZE) needs the ASan runtime first in the process,
# and the Fortran tester does not link it: it is preloaded ahead of the library.
asan=$(ldd "$lib" | awk '/libasan\.so/ {print $3}')
LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LD_PRELOAD=${asan:+$asan:}$lib LD_DEBUG=bindings LD_DEBUG_OUTPUT=$work/bindings "$dir/$tester" < "$dir/$input" > out.txt 2>&1 || status=$?
# The summary goes to stdout (unit 6) or to the file the input names.
cat out.txt ./*.out ./*.SUMM 2>/dev/null > summary.txt || true
grep -E "$routine" summary.txt || true
fail=0
if [ "$status" -ne 0 ]; then echo "FAIL: $tester exited with status $status"; fail=1; fi
case $tester in
  xblat3?) passes="COMPUTATIONAL" ;;
  *) passes="COLUMN-MAJOR ROW-MAJOR" ;;
esac
for what in $passes; do
  if ! grep -q "$routine *PASSED THE $what *COMPUTATIONAL TESTS\|$routine *PASSED THE $what TESTS" summary.txt; then
    echo "FAIL: $routine did not pass the $what tests"; fail=1
  fi
done
if ! grep -q "$routine *PASSED THE TESTS OF ERROR-EXITS" summary.txt; then
  echo "FAIL: $routine did not pass the tests of error exits"; fail=1
fi
if grep -E "FAIL|\*\*\*\*\*" summary.txt; then echo "FAIL: the tester reports failures (above)"; fail=1; fi
libname=$(basename "$lib")
if ! cat "$work"/bindings* | grep -E "to [^ ]*$libname \[[0-9]+\]: normal symbol \`$symbol'" | head -n 3 | grep .; then
  echo "FAIL: LD_DEBUG=bindings shows no call of $symbol bound to $libname"; fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $tester with $libname preloaded"
exit $fail

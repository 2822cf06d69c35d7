#!/bin/sh
# cold.sh TESSEL M N K [more args]: one cold compile (an empty kernel cache) and run, with the FP64 check
t=$1; shift
d=$(mktemp -d /tmp/tessel-cold-XXXXXX)
TESSEL_CACHE_DIR=$d "$t" gemm "$@" --target cpu --check
rc=$?
rm -rf "$d"
exit $rc

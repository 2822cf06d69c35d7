#!/bin/bash
# The GPU tests on the new tree, then the split-K sum A/B (sumab1.sh), then the
# sanitizers while time remains.
HERE=$(dirname "$(readlink -f "$0")")
mkdir -p $OUT/ab $OUT/check $OUT/san
(cd $HERE/cur && DEB=$HERE/../.deb OUT=$OUT/check STEPS="tests" timeout 420 bash scripts/device_check.sh 2>&1 | tail -6)
echo "tests done at $SECONDS s"
OUT=$OUT/ab timeout $((540 - SECONDS)) bash $HERE/sumab1.sh
echo "ab done at $SECONDS s"
(cd $HERE/cur && REUSE=1 DEB=$HERE/../.deb OUT=$OUT/san STEPS="sanitize" timeout $((575 - SECONDS)) bash scripts/device_check.sh 2>&1 | tail -8)
echo "all done at $SECONDS s"

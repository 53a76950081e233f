#!/usr/bin/env bash
# Expected-failure runner of one planted bug (plant_tests.bzl): passes only when the property binary $1, run
# with --gtest_filter=$2, exits non-zero because that property FAILED (`[  FAILED  ] $2`), and its output
# contains one of the texts $3... . Shrinking is off (RC_PARAMS=noshrink=1: the first failing case is the
# evidence, and it keeps the test fast); the base seed is fixed (QSA_PLANT_SEED, default 1) so that CI's
# verdict is reproducible; a run that exits 0, crashes or fails another way fails this test.
set -uo pipefail
bin=$1 filter=$2
shift 2
log=${TEST_TMPDIR:-/tmp}/property.log
t0=$SECONDS
RC_PARAMS=noshrink=1 QSA_BASE_SEED=${QSA_PLANT_SEED:-1} TEST_UNDECLARED_OUTPUTS_DIR=${TEST_TMPDIR:-/tmp} \
    "$bin" --gtest_filter="$filter" >"$log" 2>&1
rc=$?
grep -vE '^(QSA_COVERAGE|cp -r )' "$log" | tail -n 30
echo "--- expect_failure: $filter exited $rc after $((SECONDS - t0)) s"
if ((rc == 0)); then
    echo "FAIL: $filter PASSED with the plant compiled in: the property no longer catches it"
    exit 1
fi
if ! grep -qF "[  FAILED  ] $filter" "$log"; then
    echo "FAIL: $filter did not fail as a property (crash, no such test, or another test failed)"
    exit 1
fi
for expect in "$@"; do
    if grep -qF -- "$expect" "$log"; then
        echo "PASS: $filter failed as expected ($expect)"
        exit 0
    fi
done
echo "FAIL: $filter failed, but its output contains none of the expected texts: $*"
exit 1

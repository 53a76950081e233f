#!/usr/bin/env bash
# Expected-failure runner of one planted bug (plant_tests.bzl): passes only when the property binary $1,
# run with --gtest_filter=$2, exits non-zero because that property FAILED, and its output contains $3.
# Shrinking is off (RC_PARAMS=noshrink=1): the first failing case is evidence enough and keeps it fast.
set -uo pipefail
bin=$1 filter=$2 expect=$3
log=${TEST_TMPDIR:-/tmp}/property.log
RC_PARAMS=noshrink=1 TEST_UNDECLARED_OUTPUTS_DIR=${TEST_TMPDIR:-/tmp} "$bin" --gtest_filter="$filter" >"$log" 2>&1
rc=$?
tail -n 40 "$log"
echo "--- expect_failure: $filter exited $rc"
if ((rc == 0)); then
    echo "FAIL: $filter PASSED with the plant compiled in: the property no longer catches it"
    exit 1
fi
if ! grep -qF "[  FAILED  ] $filter" "$log"; then
    echo "FAIL: $filter did not fail as a property (crash, no such test, or another test failed)"
    exit 1
fi
if ! grep -qF -- "$expect" "$log"; then
    echo "FAIL: $filter failed, but its output does not contain the expected text: $expect"
    exit 1
fi
echo "PASS: $filter failed as expected ($expect)"

#!/usr/bin/env bash
# Expected-pass runner of a plant that is legal at some levels (plant_tests.bzl, field pass_levels): passes only
# when the property binary $1, run with --gtest_filter=$2 and QSA_LEVELS=$3, exits 0 having run at least one
# property to completion (`[       OK ]`): the checks judged at those levels raise no false alarm on an
# implementation that does something else on inputs only stricter levels define (contract section 8). Seed and
# shrinking as expect_failure.sh.
set -uo pipefail
bin=$1 filter=$2 levels=$3
log=${TEST_TMPDIR:-/tmp}/property.log
t0=$SECONDS
QSA_LEVELS=$levels RC_PARAMS=noshrink=1 QSA_BASE_SEED=${QSA_PLANT_SEED:-1} \
    TEST_UNDECLARED_OUTPUTS_DIR=${TEST_TMPDIR:-/tmp} "$bin" --gtest_filter="$filter" >"$log" 2>&1
rc=$?
grep -E '^(\[ +(OK|SKIPPED|FAILED) +\]|QSA_NOT_JUDGED|QSA_CHECK_FAILED)' "$log" | tail -n 30
echo "--- expect_pass: $filter at QSA_LEVELS=$levels exited $rc after $((SECONDS - t0)) s"
if ((rc != 0)); then
    grep -vE '^(QSA_COVERAGE|cp -r )' "$log" | tail -n 30
    echo "FAIL: $filter failed at QSA_LEVELS=$levels: a false alarm on a plant those levels allow"
    exit 1
fi
if ! grep -qE '^\[ +OK \]' "$log"; then
    echo "FAIL: $filter judged nothing at QSA_LEVELS=$levels (every property skipped or none matched)"
    exit 1
fi
echo "PASS: $filter passes at QSA_LEVELS=$levels with the plant compiled in"

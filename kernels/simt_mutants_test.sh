#!/usr/bin/env bash
# A simt kernel test must be able to fail. Usage: simt_mutants_test.sh BIN ID=FILTER...
# BIN is the test built against the mutants build of the simt kernels (its hooks read QSA_MUTANT on the host).
# It must pass with no mutant, and fail, with a report naming what differed, for each ID when run on the gtest
# FILTER (the tests that must catch it). //kernels:simt_hooks_test checks that every hook is listed somewhere.
set -uo pipefail
bin=$1
shift
bad=0
out=$(mktemp)
if ! QSA_MUTANT=0 "$bin" >"$out" 2>&1; then
    echo "FAIL: the mutants build without a mutant does not pass:"
    tail -20 "$out"
    exit 1
fi
echo "no mutant: $(grep -Eo '^\[  PASSED  \] [0-9]+ tests?' "$out" | tail -1)"
for e in "$@"; do
    id=${e%%=*}
    filter=${e#*=}
    # Stop at the first failure: it is the report, and a mutant run stays short.
    if QSA_MUTANT=$id "$bin" --gtest_filter="$filter" --gtest_break_on_failure >"$out" 2>&1; then
        echo "FAIL: mutant $id not caught by $filter"
        bad=1
        continue
    fi
    grep -q "mutant $id active" "$out" || { echo "FAIL: mutant $id: the build did not report it active"; bad=1; continue; }
    why=$(grep -m1 -E 'outIdx\[|got 0x|differ|simt: |mismatch' "$out")
    [[ -n $why ]] || { echo "FAIL: mutant $id ($filter): failed without a report of what differed:"; tail -8 "$out"; bad=1; continue; }
    echo "mutant $id caught by $filter: ${why:0:300}"
done
rm -f "$out"
exit $bad

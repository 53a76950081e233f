#!/usr/bin/env bash
# The simt selection test must be able to fail: its mutants build runs once with no mutant (must pass) and once
# per QSA_MUTANT hook of the sources it compiles (prefill_select.cu and the radix select it includes; ids read
# from the sources, so a new hook there is checked without editing this file); every one must fail with a
# reported row (or a simt misuse report), and the line it failed on is printed.
set -uo pipefail
bin=$1
src=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-qsa_indexer}/kernels
ids=$(cat "$src/prefill_select.cu" "$src/qsaRadixSelect.cuh" | grep -Eo 'QSA_MUTANT\([0-9]+\)' | grep -Eo '[0-9]+' | sort -nu)
[[ -n $ids ]] || { echo "FAIL: no QSA_MUTANT hook found in $src"; exit 1; }
out=$(mktemp)
if ! QSA_MUTANT=0 "$bin" --gtest_filter="*RowsAroundKSel*" >"$out" 2>&1; then
    echo "FAIL: the mutants build without a mutant does not pass:"; tail -20 "$out"; exit 1
fi
bad=0
for id in $ids; do
    if QSA_MUTANT=$id "$bin" >"$out" 2>&1; then
        echo "FAIL: mutant $id not caught"; bad=1; continue
    fi
    grep -q "mutant $id active" "$out" || { echo "FAIL: mutant $id: the build did not report it active"; bad=1; continue; }
    why=$(grep -m1 -E 'outIdx\[|simt: ' "$out")
    [[ -n $why ]] || { echo "FAIL: mutant $id: failed without a row report:"; tail -5 "$out"; bad=1; continue; }
    echo "mutant $id caught: ${why:0:300}"
done
rm -f "$out"
exit $bad

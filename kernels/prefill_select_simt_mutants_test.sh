#!/usr/bin/env bash
# The simt selection test must be able to fail: its mutants build runs once with no mutant (must pass) and once
# per QSA_MUTANT hook of the sources it compiles, per kernel. Ids are read from the sources, so a new hook there
# is checked without editing this file: a hook in prefill_select.cu must be caught in both kernels (CtaPerRow
# and WarpPerRow carry their own copies of 18, 19, 22, 23 and share 21's key); a hook only in the radix select
# (qsaRadixSelect.cuh: 20, the CTA barrier) in the CTA kernel. Each failure must report a row (or a simt misuse);
# the line it failed on is printed.
set -uo pipefail
bin=$1
src=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-qsa_indexer}/kernels
hooks() { grep -Eo 'QSA_MUTANT\([0-9]+\)' "$@" | grep -Eo '[0-9]+' | sort -nu; }
fused=$(hooks "$src/prefill_select.cu")
radix=$(hooks "$src/qsaRadixSelect.cuh")
[[ -n $fused && -n $radix ]] || { echo "FAIL: no QSA_MUTANT hook found in $src"; exit 1; }
out=$(mktemp)
if ! QSA_MUTANT=0 "$bin" --gtest_filter='*RowsAroundKSel*' >"$out" 2>&1; then
    echo "FAIL: the mutants build without a mutant does not pass:"
    tail -20 "$out"
    exit 1
fi
bad=0
for id in $(printf '%s\n' $fused $radix | sort -nu); do
    kernels=CtaPerRow
    grep -qx "$id" <<<"$fused" && kernels="CtaPerRow WarpPerRow"
    for k in $kernels; do
        if QSA_MUTANT=$id "$bin" --gtest_filter="*/$k" >"$out" 2>&1; then
            echo "FAIL: mutant $id not caught in the $k kernel"
            bad=1
            continue
        fi
        grep -q "mutant $id active" "$out" || { echo "FAIL: mutant $id: the build did not report it active"; bad=1; continue; }
        why=$(grep -m1 -E 'outIdx\[|simt: ' "$out")
        [[ -n $why ]] || { echo "FAIL: mutant $id ($k): failed without a row report:"; tail -5 "$out"; bad=1; continue; }
        echo "mutant $id caught: ${why:0:300}"
    done
done
rm -f "$out"
exit $bad

#!/usr/bin/env bash
# Profile `fast` plumbing check (plant_tests.bzl fast_plants_test): runs fast_digest linked against //oracle
# ($1), //oracle:oracle_fast ($2) and, per remaining argument "n:binary:key", oracle_fast_plant<n>. Passes only
# when the fast copy's stage slots differ from the ieee copy's (its arithmetic really is another one: K1a, K1b,
# B1, B2) and every plant's digest differs from the fast copy's in `key` (the plant is compiled in and changes
# what that stage outputs). Prints every observable that differs.
set -uo pipefail
ieee=$1 fast=$2
shift 2
tmp=${TEST_TMPDIR:-/tmp}
"$ieee" >"$tmp/ieee.txt" || { echo "FAIL: $ieee exited $?"; exit 1; }
"$fast" >"$tmp/fast.txt" || { echo "FAIL: $fast exited $?"; exit 1; }
# The names of the observables whose digests differ between two runs.
differing() { join "$1" "$2" | awk '$2 != $3 { print $1 }' | tr '\n' ' '; }
sort -o "$tmp/ieee.txt" "$tmp/ieee.txt"
sort -o "$tmp/fast.txt" "$tmp/fast.txt"
fail=0
d=$(differing "$tmp/ieee.txt" "$tmp/fast.txt")
echo "oracle_fast vs oracle: differs in: ${d:-nothing}"
for key in prefill.K1a.qNormed prefill.K1b.kbar decode.B1.qNormed decode.B2.logits; do
    [[ " $d " == *" $key "* ]] || { echo "FAIL: oracle_fast computes $key bit-identical to the ieee oracle"; fail=1; }
done
for spec in "$@"; do
    IFS=: read -r n bin key <<<"$spec"
    "$bin" | sort >"$tmp/plant$n.txt" || { echo "FAIL: plant $n: $bin exited non-zero"; fail=1; continue; }
    d=$(differing "$tmp/fast.txt" "$tmp/plant$n.txt")
    echo "oracle_fast_plant$n vs oracle_fast: differs in: ${d:-nothing}"
    [[ " $d " == *" $key "* ]] || { echo "FAIL: plant $n leaves $key unchanged"; fail=1; }
done
((fail == 0)) && echo "PASS: oracle_fast differs from oracle; each of $# fast plants is compiled in and changes its stage"
exit $fail

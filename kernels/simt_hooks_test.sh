#!/usr/bin/env bash
# Usage: simt_hooks_test.sh FILES CAUGHT UNREACHED (comma-separated; FILES relative to kernels/). Every
# QSA_MUTANT(id) hook in FILES must be in CAUGHT (some simt mutants test must catch it) or UNREACHED (kernels/BUILD
# says why), and no id may be in both.
set -uo pipefail
src=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-qsa_indexer}/kernels
caught=",$2,"
unreached=",$3,"
bad=0
n=0
for f in ${1//,/ }; do
    for id in $(grep -Eo 'QSA_MUTANT\([0-9]+\)' "$src/$f" | grep -Eo '[0-9]+' | sort -nu); do
        n=$((n + 1))
        if [[ $caught == *",$id,"* && $unreached == *",$id,"* ]]; then
            echo "FAIL: mutant $id ($f) is both caught and unreached"
            bad=1
        elif [[ $caught != *",$id,"* && $unreached != *",$id,"* ]]; then
            echo "FAIL: hook QSA_MUTANT($id) of $f: no simt mutants test catches it and SIMT_UNREACHED does not list it"
            bad=1
        fi
    done
done
((n > 0)) || { echo "FAIL: no hook found in $1"; exit 1; }
((bad == 0)) && echo "simt hooks: $n hook sites in ${1//,/ }: every one caught by a simt test (${2}) or unreached (${3})"
exit $bad

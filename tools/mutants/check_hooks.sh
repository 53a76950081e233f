#!/usr/bin/env bash
# Checks that tools/mutants/catalog.tsv and the QSA_MUTANT hooks in the kernel sources agree:
#   - every catalog id has a QSA_MUTANT(id) hook in the file the catalog names;
#   - every QSA_MUTANT(n) hook in the sources has a catalog row;
#   - every kernel .cu that launches kernels (<<<) calls QSA_MUTANT_SYNC() (device hooks see the id);
#   - kernels/qsaCommon.cuh includes kernels/qsaMutants.h.
# A hook deleted by a refactor is caught here (and in //tools/mutants:catalog_test, which runs this).
# Usage: tools/mutants/check_hooks.sh [CATALOG [SOURCE_FILES...]]   (defaults: the repo's catalog, kernels/*)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
catalog=${1:-$here/catalog.tsv}
shift || true
if (($# == 0)); then
    set -- "$here"/../../kernels/*.cu "$here"/../../kernels/*.cuh "$here"/../../kernels/*.h
fi
errors=0
err() {
    echo "check_hooks: $*" >&2
    errors=$((errors + 1))
}
# Source file by repository path suffix (kernels/x.cu).
find_src() {
    local want=$1 f
    for f in "${srcs[@]}"; do
        [[ $f == *"/$want" || $f == "$want" ]] && {
            echo "$f"
            return 0
        }
    done
    for f in "${srcs[@]}"; do # a copy of the folder elsewhere: match the file name
        [[ $(basename "$f") == $(basename "$want") ]] && {
            echo "$f"
            return 0
        }
    done
    return 1
}
srcs=("$@")
[[ -f $catalog ]] || {
    echo "check_hooks: no catalog at $catalog" >&2
    exit 2
}

declare -A cat_ids=()
rows=0
while IFS=$'\t' read -r id name file change story; do
    [[ -z $id || $id == \#* ]] && continue
    rows=$((rows + 1))
    [[ $id =~ ^[1-9][0-9]*$ ]] || err "catalog id '$id' is not a positive integer"
    [[ -n ${cat_ids[$id]:-} ]] && err "catalog id $id appears twice"
    cat_ids[$id]=$name
    [[ -n $name && -n $file && -n $change && -n $story ]] || err "catalog row $id has an empty field"
    src=$(find_src "$file") || {
        err "mutant $id ($name): file $file not found among the sources"
        continue
    }
    grep -Eq "QSA_MUTANT\($id\)" "$src" || err "mutant $id ($name): no QSA_MUTANT($id) hook in $file"
done <"$catalog"
((rows >= 25)) || err "catalog has $rows mutants, want at least 25"

for f in "${srcs[@]}"; do
    while read -r n; do
        [[ -n ${cat_ids[$n]:-} ]] || err "$(basename "$f"): hook QSA_MUTANT($n) is not in the catalog"
    done < <(grep -Eo 'QSA_MUTANT\([0-9]+\)' "$f" | grep -Eo '[0-9]+' | sort -un)
    if [[ $f == *.cu ]] && grep -q '<<<' "$f" && grep -q 'kernels/qsaCommon.cuh' "$f"; then
        grep -q 'QSA_MUTANT_SYNC()' "$f" || err "$(basename "$f") launches kernels but never calls QSA_MUTANT_SYNC()"
    fi
    if [[ $f == */qsaCommon.cuh ]]; then
        grep -q '#include "kernels/qsaMutants.h"' "$f" || err "qsaCommon.cuh does not include kernels/qsaMutants.h"
    fi
done

if ((errors > 0)); then
    echo "check_hooks: $errors problem(s)" >&2
    exit 1
fi
echo "check_hooks: $rows mutants, every id hooked in its file, every hook catalogued (${#srcs[@]} sources)"

#!/usr/bin/env bash
# Every QSA_PROP(Suite, Name, ...) of the property sources and every TEST/TEST_F/TEST_P/TYPED_TEST(Suite, Name)
# of the kernel tests has a row in registry.tsv ("Suite.Name" or "Suite.*"); every row names a check that
# exists (no stale rows for properties). Usage: registry_test.sh REGISTRY SOURCES...
set -euo pipefail
registry=$1
shift
rows=$(grep -v '^#' "$registry" | cut -f1)
fail=0
declare -A seen
while read -r suite name; do
    [[ -n $suite ]] || continue
    seen["$suite.$name"]=1
    if ! grep -qxF "$suite.$name" <<<"$rows" && ! grep -qxF "$suite.*" <<<"$rows"; then
        echo "registry_test: $suite.$name has no row in checks/registry.tsv (give it a level and profile)" >&2
        fail=1
    fi
done < <(sed -nE 's/^[[:space:]]*(QSA_PROP|TEST|TEST_F|TEST_P|TYPED_TEST)\(([A-Za-z0-9_]+), *([A-Za-z0-9_]+).*/\2 \3/p' "$@")
# Stale property rows: a row of a property suite that no source declares.
for id in $rows; do
    [[ $id == *'*' ]] && continue
    case ${id%%.*} in
    Fixture | Certify | Exhaustive) continue ;;
    esac
    if [[ -z ${seen[$id]:-} ]]; then
        echo "registry_test: row $id names no QSA_PROP or gtest in the sources" >&2
        fail=1
    fi
done
n=$(grep -vc '^#' "$registry")
((fail == 0)) && echo "registry_test: ${#seen[@]} checks in the sources, $n rows, all classified"
exit $fail

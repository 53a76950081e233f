#!/usr/bin/env bash
# plant_tests.bzl's PLANT_SITES (which planted source holds which plant) equals the `kPlant == n` / `kPlant != n`
# sites of the sources: a plant copy compiles only the listed sources with -DQSA_PLANT=n, so a site the table
# misses would be compiled out of its copy. Usage: plant_sites_test.sh FILE=N,N,... (FILE a path to the source).
set -uo pipefail
fail=0
for arg in "$@"; do
    file=${arg%%=*}
    listed=$(tr ',' '\n' <<<"${arg#*=}" | sort -n | tr '\n' ' ')
    found=$(grep -oE 'kPlant [=!]= [0-9]+' "$file" | grep -oE '[0-9]+$' | sort -nu | tr '\n' ' ')
    if [[ $listed != "$found" ]]; then
        echo "plant_sites_test: $(basename "$file") has plant sites [ $found] but PLANT_SITES lists [ $listed]" >&2
        fail=1
    fi
done
((fail == 0)) && echo "plant_sites_test: PLANT_SITES agrees with the sites of $# planted sources"
exit $fail

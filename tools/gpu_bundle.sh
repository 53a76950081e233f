#!/usr/bin/env bash
# Builds every gpu-tagged test and GPU tool and copies the static binaries, with the runfiles they
# read, into OUTDIR, plus OUTDIR/run_all.sh. The bundle needs only a GPU driver on the target host.
# Usage: tools/gpu_bundle.sh OUTDIR [extra bazel build flags, e.g. --config=all_archs]
set -euo pipefail
if (($# < 1)); then
    echo "usage: $0 OUTDIR [bazel build flags...]" >&2
    exit 2
fi
out=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# BAZEL_STARTUP_OPTS, e.g. "--output_base=/path", selects a Bazel server (word-split on purpose).
# shellcheck disable=SC2086
bazel() { command bazel ${BAZEL_STARTUP_OPTS:-} "$@"; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

tests=$(bazel query --output=label 'attr(tags, "[\[ ,]gpu[,\]]", tests(//...))' 2>/dev/null | sort)
tools=$(bazel query --output=label 'attr(tags, "[\[ ,]gpu[,\]]", kind("cc_binary", //...))' 2>/dev/null | sort)
if [[ -z $tests ]]; then
    echo "gpu_bundle: no gpu-tagged tests found" >&2
    exit 1
fi
# shellcheck disable=SC2086
bazel build "$@" $tests $tools
bin=$(bazel info "$@" bazel-bin 2>/dev/null)

copy_target() { # label kind(test|tool)
    local label=$1 kind=$2 pkg name
    pkg=${label#//}
    pkg=${pkg%%:*}
    name=${label##*:}
    mkdir -p "$out/$kind/$pkg"
    cp -f "$bin/$pkg/$name" "$out/$kind/$pkg/$name"
    chmod u+w "$out/$kind/$pkg/$name"
    # Symbols only: the fatbins (SASS/PTX) live in their own sections and stay.
    strip --strip-unneeded "$out/$kind/$pkg/$name"
    if [[ -d $bin/$pkg/$name.runfiles ]]; then
        rm -rf "$out/$kind/$pkg/$name.runfiles"
        # -L: the runfiles tree is symlinks into the source tree; the bundle needs the files.
        cp -rL "$bin/$pkg/$name.runfiles" "$out/$kind/$pkg/$name.runfiles"
        chmod -R u+w "$out/$kind/$pkg/$name.runfiles"
        # Other binaries in a runfiles tree (certify's children) are already in the bundle: drop the
        # copies (tools that need them fall back to the bundle's tests/ and tools/ folders).
        find "$out/$kind/$pkg/$name.runfiles" -type f -perm -u+x -print0 |
            while IFS= read -r -d '' f; do
                if [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]]; then rm -f "$f"; fi
            done
    fi
    echo "$kind $pkg/$name"
}
: >"$out/MANIFEST"
for t in $tests; do copy_target "$t" tests >>"$out/MANIFEST"; done
for t in $tools; do copy_target "$t" tools >>"$out/MANIFEST"; done
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"

cat >"$out/run_all.sh" <<'RUNALL'
#!/usr/bin/env bash
# Runs every test binary of this bundle; one line per binary: PASS/FAIL, test cases, seconds.
# Logs go to LOGDIR (default: ./logs). Exit status non-zero if any binary failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=${LOGDIR:-$here/logs}
mkdir -p "$logs"
failed=0
total=0
filter=${1:-}
while read -r kind path; do
    [[ $kind == tests ]] || continue
    [[ -z $filter || $path == *$filter* ]] || continue
    total=$((total + 1))
    name=$(basename "$path")
    log="$logs/${path//\//_}.log"
    undeclared="$logs/${path//\//_}.outputs"
    mkdir -p "$undeclared"
    runfiles="$here/tests/$path.runfiles"
    start=$(date +%s%N)
    (
        if [[ -d $runfiles/qsa_indexer ]]; then cd "$runfiles/qsa_indexer"; else cd "$here"; fi
        TEST_SRCDIR="$runfiles" TEST_WORKSPACE=qsa_indexer TEST_TMPDIR=$(mktemp -d) \
            TEST_UNDECLARED_OUTPUTS_DIR="$undeclared" "$here/tests/$path"
    ) >"$log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    cases=$(grep -Eo '^\[==========\] [0-9]+ tests? from [0-9]+ test (suite|case)s? ran' "$log" | tail -1 | awk '{print $2}')
    passed=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$log" | tail -1 | awk '{print $4}')
    if ((rc == 0)); then verdict=PASS; else verdict=FAIL; failed=$((failed + 1)); fi
    printf '%-4s %-55s cases=%-5s passed=%-5s %5d.%01d s\n' "$verdict" "$path" "${cases:-?}" "${passed:-0}" $((ms / 1000)) $((ms % 1000 / 100))
    if ((rc != 0)); then grep -E '^\[  FAILED  \]|Failure|error' "$log" | head -5 | sed 's/^/      /'; fi
done <"$here/MANIFEST"
echo "run_all: $((total - failed))/$total binaries passed (commit $(cat "$here/COMMIT"))"
((failed == 0 && total > 0))
RUNALL
chmod +x "$out/run_all.sh"
echo "gpu_bundle: $(grep -c '^tests' "$out/MANIFEST") tests, $(grep -c '^tools' "$out/MANIFEST") tools in $out ($(du -sh "$out" | cut -f1))"

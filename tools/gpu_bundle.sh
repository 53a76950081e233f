#!/usr/bin/env bash
# Builds every gpu-tagged test and GPU tool and copies the static binaries, with the runfiles they
# read, into OUTDIR, plus OUTDIR/run_all.sh and OUTDIR/engine.sh (copies of tools/), MANIFEST, LARGE (the tests tagged
# large) and COMMIT. The bundle needs only a GPU driver on the target host.
# Usage: [BUNDLE_FILTER=regex] [BUNDLE_IMPL=label [BUNDLE_PROFILE=p]] [BUNDLE_EXTRA="labels"] tools/gpu_bundle.sh
#        OUTDIR [bazel build flags, e.g. --config=all_archs]
# BUNDLE_IMPL (e.g. //kernels:qsa_kernels_fast) builds with --//api:impl=BUNDLE_IMPL and keeps only the binaries
# that reach the implementation through //api:impl (the portable suite: property *_gpu binaries, the fixture
# replay, certify, qsa_gpu); BUNDLE_EXTRA adds binaries to tools/ whatever the filters (tools/kit.sh: impl_check,
# exhaustive_primitives); OUTDIR/IMPL names it, OUTDIR/PROFILE (BUNDLE_PROFILE, default `fast` for
# //kernels:qsa_kernels_fast, else none written) is the QSA_PROFILE that run_all.sh judges by default.
set -euo pipefail
if (($# < 1)); then
    echo "usage: $0 OUTDIR [bazel build flags...]" >&2
    exit 2
fi
out=$1
shift
impl=${BUNDLE_IMPL:-}
profile=${BUNDLE_PROFILE:-}
if [[ -n $impl ]]; then
    set -- "$@" "--//api:impl=$impl"
    [[ -n $profile || $impl != //kernels:qsa_kernels_fast ]] || profile=fast
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# BAZEL_STARTUP_OPTS, e.g. "--output_base=/path", selects a Bazel server (word-split on purpose).
# shellcheck disable=SC2086
bazel() { command bazel ${BAZEL_STARTUP_OPTS:-} "$@"; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

tests=$(bazel query --output=label 'attr(tags, "[\[ ,]gpu[,\]]", tests(//...))' 2>/dev/null | sort)
tools=$(bazel query --output=label 'attr(tags, "[\[ ,]gpu[,\]]", kind("cc_binary", //...))' 2>/dev/null | sort)
# Opt-in tests tagged "large" (also "manual": not in bazel test //...): bundled, run by run_all.sh --large.
large=$(bazel query --output=label 'attr(tags, "[\[ ,]large[,\]]", tests(//...))' 2>/dev/null | sort)
# BUNDLE_FILTER (an extended regex on labels) keeps a subset, e.g. for a small bundle of a few binaries.
if [[ -n ${BUNDLE_FILTER:-} ]]; then
    tests=$(grep -E "$BUNDLE_FILTER" <<<"$tests" || true)
    tools=$(grep -E "$BUNDLE_FILTER" <<<"$tools" || true)
fi
# Another implementation: only what reaches it through //api:impl (the project's own stage tests link
# //kernels:qsa_kernels directly and would test the default build again).
if [[ -n $impl ]]; then
    through_impl=$(bazel query --output=label 'rdeps(//..., //api:impl)' 2>/dev/null | sort)
    tests=$(comm -12 <(echo "$tests") <(echo "$through_impl"))
    tools=$(comm -12 <(echo "$tools") <(echo "$through_impl"))
fi
# shellcheck disable=SC2206
extra=(${BUNDLE_EXTRA:-})
if ((${#extra[@]})); then
    tools=$(printf '%s\n' $tools "${extra[@]}" | sort -u)
fi
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
: >"$out/LARGE"
for t in $large; do
    p=${t#//}
    p=${p/://}
    if grep -qxF "tests $p" "$out/MANIFEST"; then echo "$p" >>"$out/LARGE"; fi
done
# ENV: each test's own `env` attribute (bazel test sets it; a copied binary would lose it), one "path KEY=VALUE"
# per line, e.g. the profile-fast twin of a stage property (QSA_PROFILE=fast): run_all.sh sets it for that binary.
# shellcheck disable=SC2086
bazel query --output=build "set($(echo $tests))" 2>/dev/null | awk -v repo="$repo/" '
    /^# \// { pkg = $2; sub(repo, "", pkg); sub(/\/BUILD(\.bazel)?:.*/, "", pkg) }
    /^  name = / { name = $3; gsub(/[",]/, "", name) }
    /^  env = \{/ {
        line = $0; sub(/^  env = \{/, "", line); sub(/\},?$/, "", line)
        n = split(line, kv, /, /)
        for (i = 1; i <= n; i++) { split(kv[i], p, /: /); gsub(/"/, "", p[1]); gsub(/"/, "", p[2]); print pkg "/" name, p[1] "=" p[2] }
    }' | while read -r p kv; do
    if grep -qxF "tests $p" "$out/MANIFEST"; then echo "$p $kv"; fi
done >"$out/ENV"
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"
rm -f "$out/IMPL" "$out/PROFILE"
[[ -z $impl ]] || echo "$impl" >"$out/IMPL"
[[ -z $profile ]] || echo "$profile" >"$out/PROFILE"

# run_all.sh lives in tools/run_all.sh (plain, --large and --sanitize modes; see its header); it launches every
# binary through tools/engine.sh, which it sources from beside itself.
cp -f "$repo/tools/run_all.sh" "$out/run_all.sh"
cp -f "$repo/tools/engine.sh" "$out/engine.sh"
chmod +x "$out/run_all.sh"
echo "gpu_bundle: $(grep -c '^tests' "$out/MANIFEST") tests, $(grep -c '^tools' "$out/MANIFEST") tools in $out ($(du -sh "$out" | cut -f1))${impl:+, //api:impl=$impl}${profile:+, QSA_PROFILE=$profile}"

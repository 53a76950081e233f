#!/usr/bin/env bash
# //tools/mutants:matrix_test (CPU, CI): run_mutants.sh's kill matrix rendered from fake .result logs, the `fast`
# pass's verdicts above all (contract section 9.3: a semantic survivor is a GAP, a reported rounding mutant a
# FALSE ALARM, the fast build's own control must pass). Usage: matrix_test.sh RUN_MUTANTS_SH ENGINE_SH
set -euo pipefail
runner=$1
engine=$2
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/matrix_test.XXXXXX")
fail=0

# A catalog of six mutants: two rounding, three semantic, one with a class the verdict does not know.
cat >"$tmp/catalog.tsv" <<'EOF'
# id	name	file	change	bug	class
1	R_ONE	kernels/a.cu	c	b	rounding:F1
2	R_FOUR	kernels/a.cu	c	b	rounding:F4
3	S_KILLED	kernels/a.cu	c	b	semantic
4	S_SURVIVES	kernels/a.cu	c	b	semantic
5	S_DEADLINE	kernels/a.cu	c	b	semantic
6	BOGUS	kernels/a.cu	c	b	rounding:F9
EOF

result() { # dir id pass status binary test seconds
    printf '%s\t%s\t%s\t%s\t%s\t%s\t-\n' "$2" "$3" "$4" "$5" "$6" "$7" >>"$1/m$2.$RANDOM$RANDOM.result"
}

expect_line() { # output-file line description
    if ! grep -qxF -- "$2" "$1"; then
        echo "matrix_test: $3: missing line" >&2
        echo "  want: $2" >&2
        sed 's/^/  got:  /' "$1" >&2
        fail=1
    fi
}

expect_none() { # output-file fixed-string description
    if grep -qF -- "$2" "$1"; then
        echo "matrix_test: $3: unexpected '$2'" >&2
        fail=1
    fi
}

# 1. Every verdict of the fast pass, beside the ieee passes.
d=$tmp/one
mkdir -p "$d"
result "$d" 0 ctl-qprep_test passed - - 4.0
result "$d" 0 ctlfast-layout_test_gpu passed - - 9.5
result "$d" 0 ctlfast-differential_test_gpu passed - - 30.1
result "$d" 1 full killed kernels/qprep_test QPrepTest/half.X 2.4
result "$d" 1 props killed properties/differential_test_gpu Differential.PrefillMatchesReference 45.3
result "$d" 1 fast survived - - 120.0
result "$d" 2 fast killed properties/decode_stages_test_gpu DecodeStages.B1QPrepWithinFastEnclosure 3.0
result "$d" 3 fast killed properties/layout_test_gpu Layout.PrefillRowsObeyK4 2.0
result "$d" 4 fast survived - - 100.0
result "$d" 5 fast deadline - - 400.0
result "$d" 6 fast survived - - 90.0
bash "$runner" matrix "$d" "$tmp/catalog.tsv" >"$tmp/one.out"
o=$tmp/one.out
expect_line "$o" '| 1 | R_ONE | qprep_test `QPrepTest/half.X` | 2.4 | differential_test_gpu `Differential.PrefillMatchesReference` | 45.3 | - |' "ieee row"
expect_line "$o" 'control: 1/1 binaries passed; mutants killed by the pre-merge suite: 1/1 (median time to kill 2.4 s); killed by the contract property binaries alone: 1/1 (median 45.3 s)' "ieee summary"
expect_line "$o" '| 0 | control (fast build, no mutant) | - | all 2 binaries passed | 30.1 | ok |' "fast control"
expect_line "$o" '| 1 | R_ONE | rounding:F1 | **SURVIVED** | 120.0 | ok (legal under F1) |' "rounding survivor"
expect_line "$o" '| 2 | R_FOUR | rounding:F4 | decode_stages_test_gpu `DecodeStages.B1QPrepWithinFastEnclosure` | 3.0 | **FALSE ALARM**: legal under F4 |' "rounding killed"
expect_line "$o" '| 3 | S_KILLED | semantic | layout_test_gpu `Layout.PrefillRowsObeyK4` | 2.0 | ok (killed) |' "semantic killed"
expect_line "$o" '| 4 | S_SURVIVES | semantic | **SURVIVED** | 100.0 | **GAP**: semantic mutant survived |' "semantic survivor"
expect_line "$o" '| 5 | S_DEADLINE | semantic | **DEADLINE** | 400.0 | **INCOMPLETE** (deadline) |' "deadline"
expect_line "$o" "| 6 | BOGUS | rounding:F9 | **SURVIVED** | 90.0 | **UNCLASSIFIED** (catalog class 'rounding:F9') |" "unknown class"
expect_line "$o" 'fast: control 2/2 binaries passed; semantic mutants killed 1/3 (median 2.0 s); rounding mutants not reported 1/2; gaps (semantic survivors): 4; false alarms: 2; incomplete: 5 6' "fast summary"
# Mutants 2-6 ran the fast pass only: no ieee row for them.
expect_none "$o" '| 2 | R_FOUR | not run' "ieee row of a fast-only mutant"

# 2. The fast build's own control fails: a false alarm of the profile, whatever the mutants did.
d=$tmp/two
mkdir -p "$d"
result "$d" 0 ctlfast-layout_test_gpu passed - - 9.5
result "$d" 0 ctlfast-differential_test_gpu failed properties/differential_test_gpu Differential.PrefillWithinFastEnclosure 31.0
result "$d" 3 fast killed properties/layout_test_gpu Layout.PrefillRowsObeyK4 2.0
bash "$runner" matrix "$d" "$tmp/catalog.tsv" >"$tmp/two.out"
expect_line "$tmp/two.out" '| 0 | control (fast build, no mutant) | - | **CONTROL FAILED** differential_test_gpu(failed Differential.PrefillWithinFastEnclosure) | 31 | **FALSE ALARM**: the fast build itself fails |' "failed fast control"
expect_line "$tmp/two.out" 'fast: control 1/2 binaries passed; semantic mutants killed 1/1 (median 2.0 s); rounding mutants not reported 0/0; gaps (semantic survivors): none; false alarms: none; incomplete: none' "failed fast control summary"

# 3. Logs of a run without the fast pass render as before: no fast section.
d=$tmp/three
mkdir -p "$d"
result "$d" 0 ctl-qprep_test passed - - 4.0
result "$d" 3 full killed kernels/expand_test ExpandTest.SmallContexts 0.3
result "$d" 3 props survived - - 300.0
bash "$runner" matrix "$d" "$tmp/catalog.tsv" >"$tmp/three.out"
expect_line "$tmp/three.out" '| 3 | S_KILLED | expand_test `ExpandTest.SmallContexts` | 0.3 | **SURVIVED** | 300.0 | - |' "ieee-only row"
expect_none "$tmp/three.out" 'Pass `fast`' "fast section without fast results"

# 4. `run` end to end with fake binaries (shell scripts): the fast pass runs bin_fast/ with QSA_PROFILE=fast,
# QSA_BUDGET_SCALE=FAST_SCALE and noshrink, its control runs every property binary, the ieee passes run bin/.
b=$tmp/bundle
mkdir -p "$b/bin" "$b/bin_fast"
cp "$runner" "$b/run_mutants.sh"
cp "$engine" "$b/engine.sh"
head -5 "$tmp/catalog.tsv" >"$b/catalog.tsv"
printf 'contract\t2\tlayout\tcore\tproperties/a_gpu\t1\ncontract\t1\tdiff\tcore\tproperties/b_gpu\t2\n' >"$b/contracts.tsv"
echo fake >"$b/COMMIT"
fake() { # path, shell condition under which it fails
    printf '#!/usr/bin/env bash\necho "env QSA_PROFILE=${QSA_PROFILE:-} QSA_BUDGET_SCALE=${QSA_BUDGET_SCALE:-} RC_PARAMS=${RC_PARAMS:-}"\nif %s; then echo "[  FAILED  ] Fake.%s"; exit 1; fi\n' "$2" "$(basename "$1")" >"$1"
    chmod +x "$1"
}
fake "$b/bin/properties__a_gpu" '[[ ${QSA_MUTANT:-0} == 1 || -n ${QSA_PROFILE:-} ]]'
fake "$b/bin/properties__b_gpu" '[[ ${QSA_MUTANT:-0} == 3 ]]'
fake "$b/bin_fast/properties__a_gpu" '[[ ${QSA_PROFILE:-} != fast || ${QSA_BUDGET_SCALE:-} != 0.25 || ${RC_PARAMS:-} != *noshrink=1* || ${QSA_MUTANT:-0} == 3 ]]'
fake "$b/bin_fast/properties__b_gpu" '[[ ${QSA_PROFILE:-} != fast || ${QSA_MUTANT:-0} == 2 ]]'
PASSES="props fast" JOBS=4 DEADLINE=60 bash "$b/run_mutants.sh" run "$b" "$tmp/five" >"$tmp/five.out" 2>"$tmp/five.err" || true
o=$tmp/five.out
expect_line "$o" '| 1 | R_ONE | not run |  | a_gpu `Fake.properties__a_gpu` | '"$(awk -F'\t' '$1 == 1 && $2 == "props" {print $6}' "$tmp/five/results.tsv")"' | - |' "run: props row"
expect_line "$o" '| 0 | control (fast build, no mutant) | - | all 2 binaries passed | '"$(awk -F'\t' '$2 ~ /^ctlfast-/ {if ($6 + 0 > m) m = $6 + 0} END {print m}' "$tmp/five/results.tsv")"' | ok |' "run: fast control"
expect_line "$o" 'fast: control 2/2 binaries passed; semantic mutants killed 1/2 (median '"$(awk -F'\t' '$1 == 3 && $2 == "fast" {printf "%.1f", $6}' "$tmp/five/results.tsv")"' s); rounding mutants not reported 1/2; gaps (semantic survivors): 4; false alarms: 2; incomplete: none' "run: fast summary"
if find "$tmp/five" -name '*.outputs' | grep -q .; then
    echo "matrix_test: run: the engine kept undeclared-output folders (run_mutants sets ENGINE_KEEP_OUTPUTS=0)" >&2
    fail=1
fi
if ! grep -q 'FAILED  \] Fake.properties__b_gpu' "$tmp/five/m2.fast/properties__b_gpu.log"; then
    echo "matrix_test: run: mutant 2's fast pass did not fail in bin_fast/properties__b_gpu" >&2
    fail=1
fi

rm -rf "$tmp"
if ((fail)); then
    echo "matrix_test: FAIL" >&2
    exit 1
fi
echo "matrix_test: 4 scenarios: PASS"

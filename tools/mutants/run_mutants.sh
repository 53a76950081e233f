#!/usr/bin/env bash
# Mutation testing of the kernels (tools/mutants/README.md).
#
#   run_mutants.sh build [BUNDLE_DIR]      (dev machine) build the pre-merge GPU suite (kernel stage tests +
#                                          property tests) with --//kernels:enable_mutants=true through
#                                          tools/gpu_bundle.sh, keep the suite's binaries (stripped) plus this
#                                          script and the catalog in BUNDLE_DIR (default .bundle_mut).
#   run_mutants.sh run BUNDLE_DIR LOG_DIR [ID...]
#                                          (GPU host) for the control (id 0, must pass) and each mutant, run
#                                          the suite in a fixed order with QSA_MUTANT=<id>, stop at the first
#                                          failing binary, and print the kill matrix (markdown) + median
#                                          time to kill. Two passes per mutant, run concurrently:
#                                            full  = the whole pre-merge suite: fast stage tests, the
#                                                    property binaries, the two pipeline test binaries
#                                            props = the contract property binaries alone, the portable half
#                                                    that reaches the implementation through the public API
#                                                    only (which property, first failing case: shrinking
#                                                    is off in this pass, RC_PARAMS noshrink=1, so a large
#                                                    chunked counterexample is reported, not shrunk past the
#                                                    binary's timeout); the stage property binaries (own
#                                                    launchers) run in `full` (shrinking) and, as fast
#                                                    twins, in `fast`
#                                            fast  = the same property binaries (the stage properties as
#                                                    their _fast_test twins) built against
#                                                    //kernels:qsa_kernels_fast (--use_fast_math, rsqrtf) with
#                                                    the same hooks, judged with QSA_PROFILE=fast (contract
#                                                    section 9) at QSA_BUDGET_SCALE=FAST_SCALE; its own control
#                                                    must pass; verdict per mutant from the catalog's class:
#                                                    a semantic survivor is a GAP, a killed rounding mutant
#                                                    a FALSE ALARM
#   run_mutants.sh matrix LOG_DIR [CATALOG] re-print the kill matrix from LOG_DIR.
#
# Environment (run): JOBS (parallel passes, default 12), BIN_TIMEOUT (s per binary, default 100),
# DEADLINE (s for the whole run, default 480; passes not finished are reported as such), PASSES
# ("full props fast" by default; a bundle without bin_fast drops fast), FAST_SCALE (QSA_BUDGET_SCALE of the
# fast pass and its control, default 0.25), RC_PARAMS / GTEST_* are passed through.
set -uo pipefail

# The suite in its fixed order: fast and most likely killers first. Stage tests, then pipelines, then the
# property binaries (GPU variants of //properties).
# Measured on an H200 with 16 passes in parallel (control seconds): expand 3.7, qprep 4.4, decode_select
# 2.8, scores 4.9, sort 3.8, api_errors 2.6, kcompress 22.9, decode_prep 24.5, decode_scores 24.1, then the
# property binaries (10-23 s each), then the two pipeline test binaries (28-38 s).
STAGE_ORDER=(
    kernels/expand_test
    kernels/qprep_test
    kernels/decode_select_test
    kernels/scores_test
    kernels/sort_test
    kernels/api_errors_test
    kernels/kcompress_test
    kernels/decode_prep_test
    kernels/decode_scores_test
)
# The property binaries come from properties/contracts.bzl (THE contract list, field mutant_rank) through the
# generated contracts.tsv: `build` builds it and ships it in the bundle, `run` reads it from there.
PROPS_ORDER=()
STAGE_PROPS_ORDER=()
# A stage property binary's fast-math twin (properties/BUILD): differential_stages_test -> differential_stages_fast_test.
fast_twin() {
    echo "${1%_test}_fast_test"
}

props_order() { # contracts.tsv, kind (contract|stage) -> gpu binaries of that kind with mutant_rank >= 0, by rank
    awk -F'\t' -v kind="$2" '$1 == kind && $6 >= 0 {print $6 "\t" $5}' "$1" | sort -n | cut -f2
}
PIPELINE_ORDER=(
    kernels/decode_pipeline_test
    kernels/prefill_pipeline_test
)

here=$(cd "$(dirname "$0")" && pwd)
# The launcher shared with run_all.sh and certify: beside this script in a bundle (`build` copies it), tools/ in
# the repo.
engine=$here/engine.sh
[[ -f $engine ]] || engine=$here/../engine.sh
# shellcheck source=tools/engine.sh
source "$engine" || {
    echo "run_mutants: tools/engine.sh not found beside $here/run_mutants.sh nor in $here/.." >&2
    exit 2
}

die() {
    echo "run_mutants: $*" >&2
    exit 2
}

# ---------------------------------------------------------------------------------------------------------
cmd_build() {
    local out=${1:-.bundle_mut}
    local repo
    repo=$(cd "$here/../.." && pwd)
    cd "$repo" || exit 2
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    # Our own output base, here and in gpu_bundle.sh (never block the others' server).
    export BAZEL_STARTUP_OPTS="--output_base=${BAZEL_OUTPUT_BASE:-/root/.cache/bazel_mut} ${BAZEL_STARTUP_OPTS:-}"
    # shellcheck disable=SC2086
    bazel() { command bazel $BAZEL_STARTUP_OPTS "$@"; }
    local full="$out/.full" b
    rm -rf "$full"
    bazel build --//kernels:enable_mutants=true //properties:contracts_tsv || die "bazel build failed"
    local tsv
    tsv="$(bazel info --//kernels:enable_mutants=true bazel-bin 2>/dev/null)/properties/contracts.tsv"
    mapfile -t PROPS_ORDER < <(props_order "$tsv" contract)
    mapfile -t STAGE_PROPS_ORDER < <(props_order "$tsv" stage)
    ((${#PROPS_ORDER[@]} > 0)) || die "no property binaries in $tsv"
    # MUT_DIRECT=1 skips gpu_bundle.sh (which also builds every gpu tool of the repo) and builds only the suite.
    if [[ ${MUT_DIRECT:-0} == 1 ]] || ! tools/gpu_bundle.sh "$full" --//kernels:enable_mutants=true; then
        # gpu_bundle.sh builds every gpu target of the repo; one broken unrelated target (a tool, a fixture
        # test) must not block mutation testing: build just the suite's targets the same way.
        echo "run_mutants: gpu_bundle.sh failed; building only the suite's $((${#STAGE_ORDER[@]} + ${#STAGE_PROPS_ORDER[@]} + ${#PROPS_ORDER[@]} + ${#PIPELINE_ORDER[@]})) targets" >&2
        local labels=()
        for b in "${STAGE_ORDER[@]}" "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}" "${PIPELINE_ORDER[@]}"; do labels+=("//${b%%/*}:${b#*/}"); done
        bazel build --//kernels:enable_mutants=true "${labels[@]}" || die "bazel build failed"
        local bin
        bin=$(bazel info --//kernels:enable_mutants=true bazel-bin 2>/dev/null)
        for b in "${STAGE_ORDER[@]}" "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}" "${PIPELINE_ORDER[@]}"; do
            mkdir -p "$full/tests/$(dirname "$b")"
            cp -f "$bin/$b" "$full/tests/$b"
        done
        git rev-parse HEAD >"$full/COMMIT"
    fi
    rm -rf "$out/bin"
    mkdir -p "$out/bin"
    for b in "${STAGE_ORDER[@]}" "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}" "${PIPELINE_ORDER[@]}"; do
        [[ -f $full/tests/$b ]] || die "the bundle lacks $b"
        # The hooks must be compiled in: the marker string exists only in mutant builds.
        grep -q QSA_MUTANTS_BUILD "$full/tests/$b" || die "$b was not built with --//kernels:enable_mutants=true"
        strip --strip-unneeded -o "$out/bin/${b//\//__}" "$full/tests/$b"
    done
    # The `fast` pass (contract section 9): the contract property binaries against //kernels:qsa_kernels_fast,
    # hooks compiled in as well (--//kernels:enable_mutants reaches both kernel libraries).
    # The stage properties (own launchers) come as their fast-math twins (<name>_fast_test, linked against
    # qsa_kernels_fast), shipped under the stage binary's name: the fast pass runs them first, like `full`.
    local fastflags=(--//kernels:enable_mutants=true --//api:impl=//kernels:qsa_kernels_fast) labels=()
    for b in "${STAGE_PROPS_ORDER[@]}"; do labels+=("//${b%%/*}:$(fast_twin "${b#*/}")"); done
    for b in "${PROPS_ORDER[@]}"; do labels+=("//${b%%/*}:${b#*/}"); done
    bazel build "${fastflags[@]}" "${labels[@]}" || die "bazel build of the fast pass failed"
    local fbin src
    fbin=$(bazel info "${fastflags[@]}" bazel-bin 2>/dev/null)
    rm -rf "$out/bin_fast"
    mkdir -p "$out/bin_fast"
    for b in "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}"; do
        src=$fbin/$b
        [[ " ${STAGE_PROPS_ORDER[*]} " == *" $b "* ]] && src=$fbin/$(dirname "$b")/$(fast_twin "$(basename "$b")")
        grep -q "QSA_MUTANTS_BUILD (fast math)" "$src" || die "$src (fast pass) lacks the fast-math mutant kernels"
        grep -q "QSA_MUTANTS_BUILD (fast math)" "$out/bin/${b//\//__}" && die "$b (ieee passes) carries fast-math kernels"
        strip --strip-unneeded -o "$out/bin_fast/${b//\//__}" "$src"
    done
    cp "$full/COMMIT" "$out/COMMIT"
    git -C "$repo" diff --quiet HEAD -- kernels properties || echo "dirty" >>"$out/COMMIT"
    cp "$here/run_mutants.sh" "$here/catalog.tsv" "$engine" "$tsv" "$out/"
    chmod u+w "$out/contracts.tsv"
    rm -rf "$full"
    # The device tool carries at most 64 MiB: the stripped binaries share most bytes (kernels, CUB, gtest,
    # RapidCheck), so one xz stream of them with -9's 64 MiB window is 11 MB (-6's 8 MiB window: 50 MB, which
    # with the working tree and a fast bundle passed the limit). `run` unpacks it when bin/ is absent.
    local n nf
    n=$(ls "$out/bin" | wc -l)
    nf=$(ls "$out/bin_fast" | wc -l)
    tar -C "$out" -cf - bin bin_fast | xz -T2 -9 >"$out/bin.tar.xz" && rm -rf "$out/bin" "$out/bin_fast"
    echo "run_mutants build: $n binaries + $nf fast-math property binaries in $out ($(du -sh "$out" | cut -f1))"
}

# ---------------------------------------------------------------------------------------------------------
# One pass: binaries of `order` in turn with QSA_MUTANT=id until one fails. Writes LOG/<id>.<pass>.result:
#   id<TAB>pass<TAB>status(killed|survived|passed|failed|deadline)<TAB>binary<TAB>test<TAB>seconds<TAB>shrunk
run_pass() { # bin-dir logs id pass order...
    local bindir=$1 logs=$2 id=$3 pass=$4
    shift 4
    local dir="$logs/m$id.$pass"
    mkdir -p "$dir"
    local t0 now b log rc status="" killer="-" test="-" shrunk="-" secs
    t0=$(date +%s.%N)
    for b in "$@"; do
        now=$(date +%s)
        if ((now >= END_AT)); then
            status=deadline
            break
        fi
        local budget=$((END_AT - now))
        ((budget > BIN_TIMEOUT)) && budget=$BIN_TIMEOUT
        log="$dir/${b//\//__}.log"
        # The stripped binaries have no runfiles: the engine runs them in a fresh directory. Captured fixtures
        # are not kept (the log names the failing case and its seed).
        local ENGINE_ENV=("QSA_MUTANT=$id" GTEST_FAIL_FAST=1) ENGINE_KEEP_OUTPUTS=0
        engine_run "$log" "$budget" "" "$bindir/${b//\//__}"
        rc=$?
        echo "rc=$rc" >>"$log"
        if ((rc != 0)); then
            killer=$b
            if [[ $(engine_outcome "$rc") == timeout ]]; then
                test="TIMEOUT(${budget}s)"
                ((budget < BIN_TIMEOUT)) && status=deadline
            else
                test=$(engine_first_failed "$log")
                [[ -n $test ]] || test="crash(rc=$rc)"
            fi
            # RapidCheck: "Falsifiable after N tests and M shrinks" then the printed (shrunk) case.
            local fal
            fal=$(engine_falsified "$log")
            [[ -z $fal ]] || shrunk=$fal
            [[ -n $status ]] || status=killed
            break
        fi
    done
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
    if [[ -z $status ]]; then
        if ((id == 0)); then status=passed; else status=survived; fi
    elif [[ $status == killed && $id == 0 ]]; then
        status=failed
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$pass" "$status" "$killer" "$test" "$secs" "$shrunk" \
        >"$logs/m$id.$pass.result"
    printf 'm%-3s %-5s %-8s %-40s %-55s %6ss %s\n' "$id" "$pass" "$status" "$killer" "$test" "$secs" "$shrunk"
}

# The catalog's class of mutant $2 under profile fast (column 6: semantic or rounding:F<n>).
mutant_class() { # catalog id
    awk -F'\t' -v id="$2" '!/^#/ && $1 == id {print $6}' "$1"
}

# Drops from the array named $2 every binary missing from bundle $1, loudly (never counted as a kill).
keep_present() { # bundle array-name
    local -n order=$2
    local keep=() b
    for b in "${order[@]}"; do [[ -x $1/bin/${b//\//__} ]] && keep+=("$b") || echo "run_mutants: MISSING $b" >&2; done
    order=("${keep[@]}")
}

cmd_run() {
    local bundle=$1 logs=$2
    shift 2
    bundle=$(cd "$bundle" && pwd) || die "no bundle $1"
    if [[ ! -d $bundle/bin && -f $bundle/bin.tar.xz ]]; then
        local unpack
        unpack=$(mktemp -d)
        cp "$bundle"/run_mutants.sh "$bundle"/catalog.tsv "$bundle"/contracts.tsv "$bundle"/COMMIT "$engine" "$unpack"/
        xz -dc "$bundle/bin.tar.xz" | tar -C "$unpack" -xf - || die "cannot unpack $bundle/bin.tar.xz"
        bundle=$unpack
    fi
    mkdir -p "$logs"
    logs=$(cd "$logs" && pwd)
    local ids=("$@")
    if ((${#ids[@]} == 0)); then
        mapfile -t ids < <(awk -F'\t' '!/^#/ && NF >= 2 {print $1}' "$bundle/catalog.tsv")
    fi
    [[ -f $bundle/contracts.tsv ]] || die "$bundle has no contracts.tsv (rebuild it with run_mutants.sh build)"
    mapfile -t PROPS_ORDER < <(props_order "$bundle/contracts.tsv" contract)
    mapfile -t STAGE_PROPS_ORDER < <(props_order "$bundle/contracts.tsv" stage)
    local list
    for list in STAGE_ORDER PROPS_ORDER STAGE_PROPS_ORDER PIPELINE_ORDER; do keep_present "$bundle" "$list"; done
    JOBS=${JOBS:-12}
    BIN_TIMEOUT=${BIN_TIMEOUT:-100}
    END_AT=$(($(date +%s) + ${DEADLINE:-480}))
    FAST_SCALE=${FAST_SCALE:-0.25}
    local passes=(${PASSES:-full props fast}) fast=0 fast_note="" id p noshrink="${RC_PARAMS:+$RC_PARAMS }noshrink=1"
    [[ " ${passes[*]} " == *" fast "* ]] && fast=1
    if ((fast)) && [[ ! -d $bundle/bin_fast ]]; then
        echo "run_mutants: the bundle has no bin_fast (built before the fast pass): pass fast dropped" >&2
        local keep=()
        for p in "${passes[@]}"; do [[ $p == fast ]] || keep+=("$p"); done
        passes=("${keep[@]}") fast=0
    fi
    ((fast)) && fast_note=" FAST_SCALE=$FAST_SCALE"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
    echo "run_mutants: bundle $(head -c 12 "$bundle/COMMIT"), ${#ids[@]} mutants + control, passes: ${passes[*]}," \
        "JOBS=$JOBS BIN_TIMEOUT=$BIN_TIMEOUT DEADLINE=${DEADLINE:-480}${fast_note:-}"
    if ((fast)); then
        for b in "${PROPS_ORDER[@]}"; do
            [[ -x $bundle/bin_fast/${b//\//__} ]] || die "$bundle/bin_fast lacks $b (rebuild with run_mutants.sh build)"
        done
    fi
    # One pass in the background, JOBS at a time.
    launch() { # bin-dir id pass binaries...
        engine_wait_slot "$JOBS"
        run_pass "$1" "$logs" "${@:2}" &
    }
    # Contract section 9: the fast-math build, judged under profile fast, without shrinking.
    launch_fast() { # id pass binaries...
        QSA_PROFILE=fast QSA_BUDGET_SCALE=$FAST_SCALE RC_PARAMS=$noshrink launch "$bundle/bin_fast" "$@"
    }
    # Jobs in order: the control first, one job per binary (it must run everything: in parallel), then every
    # mutant's passes.
    # CONTROL_ONLY="bin ..." limits the control to those binaries (a re-run of a few mutants).
    for b in "${STAGE_ORDER[@]}" "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}" "${PIPELINE_ORDER[@]}"; do
        [[ -z ${CONTROL_ONLY:-} || " $CONTROL_ONLY " == *" $b "* ]] && launch "$bundle/bin" 0 "ctl-${b##*/}" "$b"
    done
    # The fast build's control: every property binary must pass under QSA_PROFILE=fast (no false alarm).
    # The fast pass's binaries: the stage properties' fast twins when the bundle has them (older bundles: not),
    # then the contract property binaries.
    local fast_order=()
    for b in "${STAGE_PROPS_ORDER[@]}"; do [[ -x $bundle/bin_fast/${b//\//__} ]] && fast_order+=("$b"); done
    fast_order+=("${PROPS_ORDER[@]}")
    if ((fast)); then
        for b in "${fast_order[@]}"; do
            [[ -z ${CONTROL_ONLY:-} || " $CONTROL_ONLY " == *" $b "* ]] && launch_fast 0 "ctlfast-${b##*/}" "$b"
        done
        # Longest first: a rounding mutant must survive every property binary (the whole chain), so its fast
        # pass is among the longest jobs; start those before the others.
        for id in "${ids[@]}"; do
            [[ $(mutant_class "$bundle/catalog.tsv" "$id") == rounding:* ]] && launch_fast "$id" fast "${fast_order[@]}"
        done
    fi
    for id in "${ids[@]}"; do
        for p in "${passes[@]}"; do
            case $p in
            fast) [[ $(mutant_class "$bundle/catalog.tsv" "$id") == rounding:* ]] || launch_fast "$id" fast "${fast_order[@]}" ;;
            full) launch "$bundle/bin" "$id" full "${STAGE_ORDER[@]}" "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}" \
                "${PIPELINE_ORDER[@]}" ;;
            *) RC_PARAMS=$noshrink launch "$bundle/bin" "$id" "$p" "${PROPS_ORDER[@]}" ;;
            esac
        done
    done
    wait
    cmd_matrix "$logs" "$bundle/catalog.tsv"
}

# ---------------------------------------------------------------------------------------------------------
cmd_matrix() {
    local logs=$1 catalog=${2:-$here/catalog.tsv}
    [[ -f $catalog ]] || catalog=$logs/../catalog.tsv
    cat "$logs"/m*.result 2>/dev/null | sort -n -k1,1 >"$logs/results.tsv"
    awk -F'\t' -v catalog="$catalog" -f <(matrix_awk) "$logs/results.tsv"
}

# The matrix as an awk program (stdin: the .result lines; -v catalog: catalog.tsv).
matrix_awk() {
    cat <<'AWK'
BEGIN {
    while ((getline line < catalog) > 0) {
        if (line ~ /^#/) continue
        split(line, f, "\t"); name[f[1]] = f[2]; cls[f[1]] = f[6]; ids[++n] = f[1]
    }
}
function median(a, k,    i, j, v) { # sorts a[1..k] (insertion sort; small k)
    for (i = 2; i <= k; ++i) { v = a[i]; j = i - 1; while (j > 0 && a[j] > v) { a[j + 1] = a[j]; j-- }; a[j + 1] = v }
    return k ? (k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2) : 0
}
# The controls, per kind (ctl: the ieee build, ctlfast: the fast build); pass "ctl<kind>-<binary>".
$2 ~ /^ctl(fast)?-/ {
    k = substr($2, 1, index($2, "-") - 1); b = substr($2, length(k) + 2)
    cn[k]++; csec[k] = ($6 + 0 > csec[k] ? $6 + 0 : csec[k])
    if ($3 == "passed") cok[k]++; else cbad[k] = cbad[k] " " (k == "ctl" ? $2 : b) "(" $3 " " $5 ")"
    ctimes[k] = ctimes[k] sprintf("%s %ss, ", b, $6)
    next
}
{ st[$1, $2] = $3; bin[$1, $2] = $4; tst[$1, $2] = $5; sec[$1, $2] = $6; shr[$1, $2] = $7; seen[$1] = 1 }
function short(b) { sub(/^kernels\//, "", b); sub(/^properties\//, "", b); return b }
function cell(id, p) {
    if (!((id, p) in st)) return "not run"
    if (st[id, p] == "killed") return short(bin[id, p]) " `" tst[id, p] "`"
    return "**" toupper(st[id, p]) "**" (bin[id, p] != "-" ? " " short(bin[id, p]) " " tst[id, p] : "")
}
# Contract section 9.3: a semantic mutant must be killed under `fast`, a rounding one must not be reported.
function verdict(id,    s, c) {
    if (!((id, "fast") in st)) return "not run"
    s = st[id, "fast"]; c = cls[id]
    if (s == "deadline") return "**INCOMPLETE** (deadline)"
    if (c == "semantic") return s == "killed" ? "ok (killed)" : "**GAP**: semantic mutant survived"
    if (c ~ /^rounding:F[1-5]$/) return s == "survived" ? "ok (legal under " substr(c, 10) ")" : "**FALSE ALARM**: legal under " substr(c, 10)
    return "**UNCLASSIFIED** (catalog class '" c "')"
}
END {
    print "| id | mutant | killed by (pre-merge suite, fixed order) | s | first contract property to kill it (portable binaries alone) | s | shrunk case (B,S or B,L) |"
    print "|---:|---|---|---:|---|---:|---|"
    ctl = (cn["ctl"] && cok["ctl"] == cn["ctl"]) ? "all " cn["ctl"] " binaries passed" : "**CONTROL FAILED**" cbad["ctl"]
    print "| 0 | control (no mutant) | " ctl " | " csec["ctl"] " | (one job per binary, in parallel) | | - |"
    killed = 0; survived = 0; m = 0
    for (i = 1; i <= n; ++i) {
        id = ids[i]
        if (!(id in seen)) continue
        if ((id, "full") in st || (id, "props") in st)
            print "| " id " | " name[id] " | " cell(id, "full") " | " sec[id, "full"] " | " cell(id, "props") " | " \
                  sec[id, "props"] " | " ((id, "props") in shr ? shr[id, "props"] : "-") " |"
        if ((id, "full") in st) { if (st[id, "full"] == "killed") { killed++; t[++m] = sec[id, "full"] + 0 } else survived++ }
        # (every lookup behind an `in`: awk creates the elements it reads)
        if ((id, "props") in st) { np++; if (st[id, "props"] == "killed") { pk++; pt[++pm] = sec[id, "props"] + 0 } }
        if ((id, "fast") in st) fids[++nf] = id
    }
    med = median(t, m); pmed = median(pt, pm)
    print ""
    print "control seconds per binary: " ctimes["ctl"]
    printf "control: %d/%d binaries passed; mutants killed by the pre-merge suite: %d/%d (median time to kill %.1f s);" \
           " killed by the contract property binaries alone: %d/%d (median %.1f s)\n", \
           cok["ctl"] + 0, cn["ctl"] + 0, killed, killed + survived, med, pk + 0, np + 0, pmed
    if (!nf && !cn["ctlfast"]) exit
    print ""
    print "Pass `fast`: the stage properties' fast twins and the contract property binaries against //kernels:qsa_kernels_fast (same hooks), QSA_PROFILE=fast."
    print ""
    print "| id | mutant | class (contract 9.1) | killed by (fast build, QSA_PROFILE=fast) | s | verdict |"
    print "|---:|---|---|---|---:|---|"
    fctl = (cn["ctlfast"] && cok["ctlfast"] == cn["ctlfast"]) ? "all " cn["ctlfast"] " binaries passed" : "**CONTROL FAILED**" cbad["ctlfast"]
    print "| 0 | control (fast build, no mutant) | - | " fctl " | " csec["ctlfast"] " | " \
          ((cn["ctlfast"] && cok["ctlfast"] == cn["ctlfast"]) ? "ok" : "**FALSE ALARM**: the fast build itself fails") " |"
    for (i = 1; i <= nf; ++i) {
        id = fids[i]; v = verdict(id)
        print "| " id " | " name[id] " | " cls[id] " | " cell(id, "fast") " | " sec[id, "fast"] " | " v " |"
        if (cls[id] == "semantic") { nsem++; if (st[id, "fast"] == "killed") { sk++; ft[++fm] = sec[id, "fast"] + 0 } }
        else if (cls[id] ~ /^rounding:F[1-5]$/) { nrnd++; if (st[id, "fast"] == "survived") rk++ }
        if (v ~ /GAP/) gaps = gaps " " id
        else if (v ~ /FALSE ALARM/) alarms = alarms " " id
        else if (v ~ /INCOMPLETE|UNCLASSIFIED/) other = other " " id
    }
    print ""
    print "fast control seconds per binary: " ctimes["ctlfast"]
    printf "fast: control %d/%d binaries passed; semantic mutants killed %d/%d (median %.1f s); rounding mutants not" \
           " reported %d/%d; gaps (semantic survivors):%s; false alarms:%s; incomplete:%s\n", \
           cok["ctlfast"] + 0, cn["ctlfast"] + 0, sk + 0, nsem + 0, median(ft, fm), rk + 0, nrnd + 0, \
           (gaps == "" ? " none" : gaps), (alarms == "" ? " none" : alarms), (other == "" ? " none" : other)
}
AWK
}

# ---------------------------------------------------------------------------------------------------------
case ${1:-} in
build)
    shift
    cmd_build "$@"
    ;;
run)
    shift
    (($# >= 2)) || die "usage: $0 run BUNDLE_DIR LOG_DIR [ID...]"
    cmd_run "$@"
    ;;
matrix)
    shift
    (($# >= 1)) || die "usage: $0 matrix LOG_DIR [CATALOG]"
    cmd_matrix "$@"
    ;;
*)
    sed -n '2,34p' "$0"
    exit 2
    ;;
esac

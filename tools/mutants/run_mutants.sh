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
#                                                    launchers) run in `full` only, which shrinks
#   run_mutants.sh matrix LOG_DIR          re-print the kill matrix from LOG_DIR.
#
# Environment (run): JOBS (parallel passes, default 12), BIN_TIMEOUT (s per binary, default 100),
# DEADLINE (s for the whole run, default 420; passes not finished are reported as such), PASSES
# ("full props" by default), RC_PARAMS / GTEST_* are passed through.
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
props_order() { # contracts.tsv, kind (contract|stage) -> gpu binaries of that kind with mutant_rank >= 0, by rank
    awk -F'\t' -v kind="$2" '$1 == kind && $6 >= 0 {print $6 "\t" $5}' "$1" | sort -n | cut -f2
}
PIPELINE_ORDER=(
    kernels/decode_pipeline_test
    kernels/prefill_pipeline_test
)

here=$(cd "$(dirname "$0")" && pwd)

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
    # gpu_bundle.sh calls plain `bazel`: give it our own output base (never block the others' server).
    local wrap
    wrap=$(mktemp -d)
    cat >"$wrap/bazel" <<WRAP
#!/usr/bin/env bash
exec /usr/bin/bazel --output_base=${BAZEL_OUTPUT_BASE:-/root/.cache/bazel_mut} "\$@"
WRAP
    chmod +x "$wrap/bazel"
    local full="$out/.full" b
    rm -rf "$full"
    PATH="$wrap:$PATH" bazel build --//kernels:enable_mutants=true //properties:contracts_tsv || die "bazel build failed"
    local tsv
    tsv="$(PATH="$wrap:$PATH" bazel info --//kernels:enable_mutants=true bazel-bin 2>/dev/null)/properties/contracts.tsv"
    mapfile -t PROPS_ORDER < <(props_order "$tsv" contract)
    mapfile -t STAGE_PROPS_ORDER < <(props_order "$tsv" stage)
    ((${#PROPS_ORDER[@]} > 0)) || die "no property binaries in $tsv"
    # MUT_DIRECT=1 skips gpu_bundle.sh (which also builds every gpu tool of the repo) and builds only the suite.
    if [[ ${MUT_DIRECT:-0} == 1 ]] || ! PATH="$wrap:$PATH" tools/gpu_bundle.sh "$full" --//kernels:enable_mutants=true; then
        # gpu_bundle.sh builds every gpu target of the repo; one broken unrelated target (a tool, a fixture
        # test) must not block mutation testing: build just the suite's targets the same way.
        echo "run_mutants: gpu_bundle.sh failed; building only the suite's $((${#STAGE_ORDER[@]} + ${#STAGE_PROPS_ORDER[@]} + ${#PROPS_ORDER[@]} + ${#PIPELINE_ORDER[@]})) targets" >&2
        local labels=()
        for b in "${STAGE_ORDER[@]}" "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}" "${PIPELINE_ORDER[@]}"; do labels+=("//${b%%/*}:${b#*/}"); done
        PATH="$wrap:$PATH" bazel build --//kernels:enable_mutants=true "${labels[@]}" || die "bazel build failed"
        local bin
        bin=$(PATH="$wrap:$PATH" bazel info --//kernels:enable_mutants=true bazel-bin 2>/dev/null)
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
    cp "$full/COMMIT" "$out/COMMIT"
    git -C "$repo" diff --quiet HEAD -- kernels properties || echo "dirty" >>"$out/COMMIT"
    cp "$here/run_mutants.sh" "$here/catalog.tsv" "$tsv" "$out/"
    chmod u+w "$out/contracts.tsv"
    rm -rf "$full"
    # The device tool carries at most 64 MiB: the stripped binaries share most bytes (kernels, CUB, gtest,
    # RapidCheck), so one xz stream of them is ~8x smaller. `run` unpacks it when bin/ is absent.
    local n
    n=$(ls "$out/bin" | wc -l)
    tar -C "$out" -cf - bin | xz -T2 -6 >"$out/bin.tar.xz" && rm -rf "$out/bin"
    echo "run_mutants build: $n binaries in $out ($(du -sh "$out" | cut -f1))"
}

# ---------------------------------------------------------------------------------------------------------
# One pass: binaries of `order` in turn with QSA_MUTANT=id until one fails. Writes LOG/<id>.<pass>.result:
#   id<TAB>pass<TAB>status(killed|survived|passed|failed|deadline)<TAB>binary<TAB>test<TAB>seconds<TAB>shrunk
run_pass() {
    local bundle=$1 logs=$2 id=$3 pass=$4
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
        local tmp
        tmp=$(mktemp -d)
        (
            cd "$tmp" || exit 99
            QSA_MUTANT=$id GTEST_FAIL_FAST=1 TEST_TMPDIR="$tmp" TEST_UNDECLARED_OUTPUTS_DIR="$tmp" \
                timeout -k 5 "$budget" "$bundle/bin/${b//\//__}"
        ) >"$log" 2>&1
        rc=$?
        rm -rf "$tmp"
        echo "rc=$rc" >>"$log"
        if ((rc != 0)); then
            killer=$b
            if ((rc == 124 || rc == 137)); then
                test="TIMEOUT(${budget}s)"
                ((budget < BIN_TIMEOUT)) && status=deadline
            else
                test=$(grep -m1 -Eo '^\[  FAILED  \] [A-Za-z0-9_/.]+' "$log" | awk '{print $4}')
                [[ -n $test ]] || test="crash(rc=$rc)"
            fi
            # RapidCheck: "Falsifiable after N tests and M shrinks" then the printed (shrunk) case.
            local fal
            fal=$(grep -m1 -Eo 'Falsifiable after [0-9]+ tests?( and [0-9]+ shrinks?)?' "$log")
            if [[ -n $fal ]]; then
                local n m case bs
                n=$(echo "$fal" | awk '{print $3}')
                m=$(echo "$fal" | grep -Eo '[0-9]+ shrink' | awk '{print $1}')
                case=$(sed -n '/Falsifiable after/,$p' "$log" | grep -m1 -Eo '(prefill|decode-chain) B=[0-9]+ (S=[0-9]+|L=\[[0-9, ]*\])')
                bs=$(echo "$case" | sed -E 's/^(prefill|decode-chain) //; s/ /,/')
                shrunk="${bs:-?} (after $n tests, ${m:-0} shrinks)"
            fi
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
        cp "$bundle"/run_mutants.sh "$bundle"/catalog.tsv "$bundle"/contracts.tsv "$bundle"/COMMIT "$unpack"/
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
    END_AT=$(($(date +%s) + ${DEADLINE:-420}))
    export BIN_TIMEOUT END_AT
    local passes=(${PASSES:-full props})
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
    echo "run_mutants: bundle $(head -c 12 "$bundle/COMMIT"), ${#ids[@]} mutants + control, passes: ${passes[*]}," \
        "JOBS=$JOBS BIN_TIMEOUT=$BIN_TIMEOUT DEADLINE=${DEADLINE:-420}"
    # Job list: the control first, one job per binary (it must run everything: in parallel), then every
    # mutant's passes.
    local jobs=() id p
    # CONTROL_ONLY="bin ..." limits the control to those binaries (a re-run of a few mutants).
    for b in "${STAGE_ORDER[@]}" "${STAGE_PROPS_ORDER[@]}" "${PROPS_ORDER[@]}" "${PIPELINE_ORDER[@]}"; do
        [[ -z ${CONTROL_ONLY:-} || " $CONTROL_ONLY " == *" $b "* ]] && jobs+=("0 ctl $b")
    done
    for id in "${ids[@]}"; do
        for p in "${passes[@]}"; do jobs+=("$id $p"); done
    done
    export -f run_pass
    export STAGE_LIST="${STAGE_ORDER[*]} ${STAGE_PROPS_ORDER[*]}" PROPS_LIST="${PROPS_ORDER[*]}" PIPE_LIST="${PIPELINE_ORDER[*]}"
    printf '%s\n' "${jobs[@]}" | xargs -P "$JOBS" -L 1 bash -c '
        id=$0; pass=$1
        if [[ $pass == ctl ]]; then order=($2); pass=ctl-$(basename $2);
        elif [[ $pass == full ]]; then order=($STAGE_LIST $PROPS_LIST $PIPE_LIST);
        else order=($PROPS_LIST); export RC_PARAMS="${RC_PARAMS:+$RC_PARAMS }noshrink=1"; fi
        run_pass "'"$bundle"'" "'"$logs"'" "$id" "$pass" "${order[@]}"'
    cmd_matrix "$logs" "$bundle/catalog.tsv"
}

# ---------------------------------------------------------------------------------------------------------
cmd_matrix() {
    local logs=$1 catalog=${2:-$here/catalog.tsv}
    [[ -f $catalog ]] || catalog=$logs/../catalog.tsv
    cat "$logs"/m*.result 2>/dev/null | sort -n -k1,1 >"$logs/results.tsv"
    awk -F'\t' -v catalog="$catalog" '
        BEGIN {
            while ((getline line < catalog) > 0) {
                if (line ~ /^#/) continue
                split(line, f, "\t"); name[f[1]] = f[2]; ids[++n] = f[1]
            }
        }
        $2 ~ /^ctl-/ {
            nctl++; ctlsec = ($6 + 0 > ctlsec ? $6 + 0 : ctlsec)
            if ($3 == "passed") ctlok++; else ctlbad = ctlbad " " $2 "(" $3 " " $5 ")"
            ctltimes = ctltimes sprintf("%s %ss, ", substr($2, 5), $6)
            next
        }
        { st[$1, $2] = $3; bin[$1, $2] = $4; tst[$1, $2] = $5; sec[$1, $2] = $6; shr[$1, $2] = $7; seen[$1] = 1 }
        function short(b) { sub(/^kernels\//, "", b); sub(/^properties\//, "", b); return b }
        function cell(id, p) {
            if (!((id, p) in st)) return "not run"
            if (st[id, p] == "killed") return short(bin[id, p]) " `" tst[id, p] "`"
            return "**" toupper(st[id, p]) "**" (bin[id, p] != "-" ? " " short(bin[id, p]) " " tst[id, p] : "")
        }
        END {
            print "| id | mutant | killed by (pre-merge suite, fixed order) | s | first contract property to kill it (portable binaries alone) | s | shrunk case (B,S or B,L) |"
            print "|---:|---|---|---:|---|---:|---|"
            ctl = (nctl && ctlok == nctl) ? "all " nctl " binaries passed" : "**CONTROL FAILED**" ctlbad
            print "| 0 | control (no mutant) | " ctl " | " ctlsec " | (one job per binary, in parallel) | | - |"
            killed = 0; survived = 0; m = 0
            for (i = 1; i <= n; ++i) {
                id = ids[i]
                if (!(id in seen)) continue
                print "| " id " | " name[id] " | " cell(id, "full") " | " sec[id, "full"] " | " cell(id, "props") " | " \
                      sec[id, "props"] " | " ((id, "props") in shr ? shr[id, "props"] : "-") " |"
                if (st[id, "full"] == "killed") { killed++; t[++m] = sec[id, "full"] + 0 } else survived++
                if (st[id, "props"] == "killed") { pk++; pt[++pm] = sec[id, "props"] + 0 }
            }
            # medians (insertion sort; small n)
            for (i = 2; i <= m; ++i) { v = t[i]; j = i - 1; while (j > 0 && t[j] > v) { t[j + 1] = t[j]; j-- }; t[j + 1] = v }
            for (i = 2; i <= pm; ++i) { v = pt[i]; j = i - 1; while (j > 0 && pt[j] > v) { pt[j + 1] = pt[j]; j-- }; pt[j + 1] = v }
            med = m ? (m % 2 ? t[(m + 1) / 2] : (t[m / 2] + t[m / 2 + 1]) / 2) : 0
            pmed = pm ? (pm % 2 ? pt[(pm + 1) / 2] : (pt[pm / 2] + pt[pm / 2 + 1]) / 2) : 0
            print ""
            print "control seconds per binary: " ctltimes
            printf "control: %d/%d binaries passed; mutants killed by the pre-merge suite: %d/%d (median time to kill %.1f s);" \
                   " killed by the contract property binaries alone: %d/%d (median %.1f s)\n", \
                   ctlok + 0, nctl + 0, killed, killed + survived, med, pk + 0, killed + survived, pmed
        }' "$logs/results.tsv"
}

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
    sed -n '2,22p' "$0"
    exit 2
    ;;
esac

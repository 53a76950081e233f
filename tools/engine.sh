# shellcheck shell=bash
# THE way a test binary of this project is launched, timed out and read: run_all.sh (plain and sanitize modes) and
# tools/mutants/run_mutants.sh (every pass) source it; certify (C++, tools/certify_child.cc) runs it as a command
# for each of its children. So a launch, a timeout, a declared env and a verdict mean the same thing in all three.
# gpu_bundle.sh and `run_mutants.sh build` copy it next to the script; certify finds it there (the bundle root),
# in its runfiles (`bazel run //tools:certify`) or as --bin-dir/tools/engine.sh.
# Tested without a GPU by //tools:run_all_test (fake bundles: pass, fail, crash, hang, declared env, runfiles, the
# command form), //tools/mutants:matrix_test (run_mutants.sh run end to end) and //tools:certify_e2e_test (certify
# against fake children: crash, hang with a grandchild, declared env).
#
#   engine_run LOG TIMEOUT DIR CMD...
#       Runs CMD (a test binary, or a wrapper such as compute-sanitizer followed by it) as `bazel test` runs a
#       test: in DIR/qsa_indexer when DIR is the binary's runfiles tree (TEST_SRCDIR=RUNFILES_DIR=DIR,
#       TEST_WORKSPACE), else in a fresh temporary directory; TEST_TMPDIR (and TMPDIR) fresh and removed
#       afterwards; TEST_UNDECLARED_OUTPUTS_DIR = LOG without .log, plus .outputs (kept: captured fixtures land
#       there), or inside TEST_TMPDIR (removed) when ENGINE_KEEP_OUTPUTS=0 (run_mutants: hundreds of killing runs
#       would bring back hundreds of fixtures, some of tens of MB, from one device call). The environment is the
#       caller's plus ENGINE_ENV (an array of KEY=VALUE, set last: the binary's declared env). Stdin is /dev/null.
#       After TIMEOUT seconds (a decimal number) CMD and every process of its group get SIGTERM, 10 s later
#       SIGKILL. Stdout and stderr go to LOG. Returns CMD's exit status (124 or 137: timed out); sets ENGINE_MS
#       (wall milliseconds).
#   engine_outcome RC           pass | fail | timeout | crash(SIGNAME)  (a status above 128 is a signal)
#   engine_gtest_counts LOG     "CASES PASSED" from gtest's last summary ("? 0" when it printed none)
#   engine_first_failed LOG     the first "[  FAILED  ]" test name (empty when none)
#   engine_falsified LOG        RapidCheck's "B,S (after N tests, M shrinks)" of the first falsified property,
#                               "? (after ...)" when the case line names no shape (empty when nothing falsified)
#   engine_declared_env ENV PATH  the KEY=VALUE lines of PATH in a bundle's ENV file (gpu_bundle.sh), one per line
#   engine_wait_slot N          waits until fewer than N background jobs of the calling shell run (a pool of N)
#
# As a command (certify's children):
#   bash engine.sh run [--declared ENV PATH] LOG TIMEOUT DIR [KEY=VALUE...] -- CMD...
#       engine_run LOG TIMEOUT DIR CMD... with ENGINE_ENV = the KEY=VALUE arguments, then the declared env of PATH
#       in the bundle's ENV file (set last, as run_all.sh sets it). CMD's output goes to LOG only (a caller that
#       wants its lines live reads LOG as it grows). Prints one line on stdout when CMD has ended:
#           engine: outcome=<pass|fail|timeout|crash(SIGNAME)> rc=<CMD's exit status> ms=<wall milliseconds>
#       and exits with CMD's status. A bad command line: one line on stderr, exit 2, no outcome line.

ENGINE_ENV=()
ENGINE_MS=0

engine_run() { # log timeout dir cmd...
    local log=$1 limit=$2 dir=$3
    shift 3
    local undeclared="${log%.log}.outputs" tmp start rc
    tmp=$(mktemp -d)
    [[ ${ENGINE_KEEP_OUTPUTS:-1} == 0 ]] && undeclared=$tmp/outputs
    mkdir -p "$undeclared"
    start=${EPOCHREALTIME:-$(date +%s.%6N)} # seconds.microseconds, without a process where bash has it
    (
        if [[ -n $dir && -d $dir/qsa_indexer ]]; then
            cd "$dir/qsa_indexer" || exit 97
            export TEST_SRCDIR=$dir RUNFILES_DIR=$dir TEST_WORKSPACE=qsa_indexer
        else
            cd "$tmp" || exit 97
        fi
        TEST_TMPDIR=$tmp TMPDIR=$tmp TEST_UNDECLARED_OUTPUTS_DIR=$undeclared \
            env ${ENGINE_ENV[@]+"${ENGINE_ENV[@]}"} timeout -k 10 "$limit" "$@"
        # Not the subshell's last command, so bash does not exec it: a crash comes back as a status above 128
        # instead of killing the subshell (whose death bash would report on run_all's own output).
        exit $?
    ) </dev/null >"$log" 2>&1
    rc=$?
    local end=${EPOCHREALTIME:-$(date +%s.%6N)}
    ENGINE_MS=$(((${end/[.,]/} - ${start/[.,]/}) / 1000))
    rm -rf "$tmp"
    return $rc
}

engine_outcome() { # rc
    local rc=$1
    if ((rc == 0)); then
        echo pass
    elif ((rc == 124 || rc == 137)); then
        echo timeout
    elif ((rc > 128 && rc < 160)); then
        echo "crash($(kill -l $((rc - 128)) 2>/dev/null || echo "signal $((rc - 128))"))"
    else
        echo fail
    fi
}

engine_gtest_counts() { # log
    local cases passed
    cases=$(grep -Eo '^\[==========\] [0-9]+ tests? from [0-9]+ test (suite|case)s? ran' "$1" | tail -1 | awk '{print $2}')
    passed=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$1" | tail -1 | awk '{print $4}')
    echo "${cases:-?} ${passed:-0}"
}

engine_first_failed() { # log
    grep -m1 -Eo '^\[  FAILED  \] [A-Za-z0-9_/.]+' "$1" | awk '{print $4}'
}

engine_falsified() { # log
    local fal n m case bs
    fal=$(grep -m1 -Eo 'Falsifiable after [0-9]+ tests?( and [0-9]+ shrinks?)?' "$1")
    [[ -n $fal ]] || return 0
    n=$(awk '{print $3}' <<<"$fal")
    m=$(grep -Eo '[0-9]+ shrink' <<<"$fal" | awk '{print $1}')
    case=$(sed -n '/Falsifiable after/,$p' "$1" | grep -m1 -Eo '(prefill|decode-chain) B=[0-9]+ (S=[0-9]+|L=\[[0-9, ]*\])')
    bs=$(sed -E 's/^(prefill|decode-chain) //; s/ /,/' <<<"$case")
    echo "${bs:-?} (after $n tests, ${m:-0} shrinks)"
}

engine_declared_env() { # env-file path
    [[ -f $1 ]] || return 0
    awk -v p="$2" '$1 == p { print $2 }' "$1"
}

engine_wait_slot() { # n
    while (($(jobs -rp | wc -l) >= $1)); do wait -n; done
}

# ---- the command form (certify) -------------------------------------------------------------------------------

engine_usage() { # why
    echo "engine: $1 (usage: engine.sh run [--declared ENV PATH] LOG TIMEOUT DIR [KEY=VALUE...] -- CMD...)" >&2
    return 2
}

engine_main() { # run [--declared ENV PATH] LOG TIMEOUT DIR [KEY=VALUE...] -- CMD...
    [[ ${1:-} == run ]] || {
        engine_usage "unknown command '${1:-}'"
        return
    }
    shift
    local envfile="" envpath=""
    if [[ ${1:-} == --declared ]]; then
        (($# >= 3)) || {
            engine_usage "--declared wants ENV and PATH"
            return
        }
        envfile=$2 envpath=$3
        shift 3
    fi
    (($# >= 3)) || {
        engine_usage "LOG, TIMEOUT and DIR are missing"
        return
    }
    local log=$1 limit=$2 dir=$3
    shift 3
    [[ $limit =~ ^[0-9]+(\.[0-9]+)?$ ]] || {
        engine_usage "TIMEOUT '$limit' is not a number of seconds"
        return
    }
    local ENGINE_ENV=()
    while (($# > 0)) && [[ $1 != -- ]]; do
        [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || {
            engine_usage "'$1' is not KEY=VALUE"
            return
        }
        ENGINE_ENV+=("$1")
        shift
    done
    (($# >= 2)) || {
        engine_usage "no command after --"
        return
    }
    shift
    [[ -z $envfile ]] || mapfile -t -O ${#ENGINE_ENV[@]} ENGINE_ENV < <(engine_declared_env "$envfile" "$envpath")
    local rc
    engine_run "$log" "$limit" "$dir" "$@"
    rc=$?
    echo "engine: outcome=$(engine_outcome "$rc") rc=$rc ms=$ENGINE_MS"
    return $rc
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    engine_main "$@"
    exit
fi

#!/usr/bin/env bash
# //tools:run_all_test (CPU, CI): run_all.sh and the engine it shares with run_mutants.sh (tools/engine.sh) on a
# fake bundle whose "binaries" are shell scripts: one that passes (and checks that it runs as bazel test runs it:
# from its runfiles, with TEST_SRCDIR, a fresh TEST_TMPDIR and TEST_UNDECLARED_OUTPUTS_DIR), one that fails, one
# that crashes, one that hangs, one that passes only under its declared env (the bundle's ENV file, which wins
# over the caller's), one tagged large. Then the sanitize mode through a fake compute-sanitizer: its summary
# lines parsed, a finding and a timeout FAIL. Last, the engine as the command certify runs (`engine.sh run`): its
# outcome line and exit status for each verdict, KEY=VALUE and --declared, a bad command line.
# Usage: run_all_test.sh RUN_ALL_SH ENGINE_SH
set -uo pipefail
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/run_all_test.XXXXXX")
b=$tmp/bundle
mkdir -p "$b/tests/kernels" "$b/tests/properties"
cp "$1" "$b/run_all.sh"
cp "$2" "$b/engine.sh"
echo fake-commit >"$b/COMMIT"
fail=0
say() {
    echo "run_all_test: $*" >&2
    fail=1
}

# A fake test binary: BODY after a shebang; a runfiles tree for it (bazel's layout).
fake() { # bundle-path body
    printf '#!/usr/bin/env bash\n%s\n' "$2" >"$b/tests/$1"
    chmod +x "$b/tests/$1"
    mkdir -p "$b/tests/$1.runfiles/qsa_indexer"
}
gtest_ok='echo "[==========] 3 tests from 1 test suite ran. (1 ms total)"; echo "[  PASSED  ] 3 tests."'
fake kernels/pass_test "
[[ \$PWD == \"$b/tests/kernels/pass_test.runfiles/qsa_indexer\" ]] || { echo \"cwd \$PWD\"; exit 3; }
[[ \$TEST_SRCDIR == \"$b/tests/kernels/pass_test.runfiles\" && \$TEST_WORKSPACE == qsa_indexer ]] || { echo srcdir; exit 3; }
[[ \$RUNFILES_DIR == \"\$TEST_SRCDIR\" ]] || { echo runfiles_dir; exit 3; }
touch \"\$TEST_TMPDIR/x\" && [[ -d \$TEST_UNDECLARED_OUTPUTS_DIR && \$TMPDIR == \"\$TEST_TMPDIR\" ]] || { echo tmpdirs; exit 3; }
$gtest_ok"
fake kernels/fail_test 'echo "[==========] 2 tests from 1 test suite ran. (1 ms total)"; echo "[  PASSED  ] 1 test."
echo "[  FAILED  ] Fake.Fails"; exit 1'
fake kernels/crash_test "$gtest_ok"'; kill -SEGV $$'
fake kernels/hang_test 'exec sleep 60'
fake properties/env_test "[[ \${QSA_PROFILE:-} == fast ]] || { echo \"QSA_PROFILE=\${QSA_PROFILE:-}\"; exit 1; }; $gtest_ok"
fake kernels/large_test "$gtest_ok"
for p in kernels/pass_test kernels/fail_test kernels/crash_test kernels/hang_test properties/env_test kernels/large_test; do
    echo "tests $p"
done >"$b/MANIFEST"
echo "properties/env_test QSA_PROFILE=fast" >"$b/ENV"
echo kernels/large_test >"$b/LARGE"

expect() { # output-file extended-regex what
    grep -Eq -- "$2" "$1" || say "$3: no line matching /$2/ in:$(sed 's/^/    /' "$1")"
}

# 1. Plain mode: every verdict, 3 at a time, the caller's QSA_PROFILE overridden by the declared one.
start=$(date +%s)
QSA_PROFILE=ieee BIN_TIMEOUT=3 LOGDIR=$tmp/logs1 bash "$b/run_all.sh" -j 3 >"$tmp/plain.out" 2>&1
rc=$?
((rc != 0)) || say "plain: exit 0 with failing binaries"
(($(date +%s) - start < 30)) || say "plain: the hang was not cut at BIN_TIMEOUT=3"
o=$tmp/plain.out
expect "$o" '^PASS kernels/pass_test +cases=3 +passed=3 ' "plain: pass"
expect "$o" '^FAIL kernels/fail_test +cases=2 +passed=1 ' "plain: fail"
expect "$o" '^ +\[  FAILED  \] Fake.Fails' "plain: the failing test named"
expect "$o" '^FAIL kernels/crash_test .*\(crash\(SEGV\)\)' "plain: crash"
expect "$o" '^FAIL kernels/hang_test .*\(timeout after 3 s\)' "plain: hang"
expect "$o" '^PASS properties/env_test .*\(its env: QSA_PROFILE=fast\)' "plain: declared env"
expect "$o" '^SKIP kernels/large_test +\(tagged large' "plain: large skipped"
expect "$o" '^run_all: 2/5 binaries passed \(commit fake-commit, impl //kernels:qsa_kernels, QSA_PROFILE=ieee, 3 at a time\); 1 large test\(s\) NOT run$' "plain: summary"
[[ -f $tmp/logs1/kernels_pass_test.log ]] || say "plain: no log for kernels/pass_test"
[[ -d $tmp/logs1/kernels_pass_test.outputs ]] || say "plain: no undeclared-outputs folder kept for kernels/pass_test"
! grep -q 'Segmentation fault' "$o" || say "plain: the shell's notice of the crash leaked into run_all's output"

# 2. A filter, --large: only what passes, exit 0.
BIN_TIMEOUT=3 LOGDIR=$tmp/logs2 bash "$b/run_all.sh" --large _test >"$tmp/large.out" 2>&1 && say "large: exit 0 with failing binaries"
expect "$tmp/large.out" '^PASS kernels/large_test ' "large: run"
LOGDIR=$tmp/logs3 bash "$b/run_all.sh" pass_test >"$tmp/one.out" 2>&1 || say "filter: exit $? for a passing binary"
expect "$tmp/one.out" '^run_all: 1/1 binaries passed' "filter: summary"

# 3. Sanitize mode, through a fake compute-sanitizer (runs the binary, prints the tool's summary; FAKE_FINDINGS
# errors for the binaries whose path contains FAKE_BAD).
mkdir -p "$tmp/path"
cat >"$tmp/path/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
tool=""
while [[ $1 == --* ]]; do
    [[ $1 == --tool ]] && tool=$2
    case $1 in --tool | --error-exitcode | --print-limit | --racecheck-report) shift 2 ;; *) shift ;; esac
done
"$@" &
child=$!
trap 'kill $child; exit 143' TERM
wait $child
rc=$?
n=0
[[ -n ${FAKE_BAD:-} && $* == *"$FAKE_BAD"* ]] && n=1
[[ $tool == racecheck ]] && echo "========= RACECHECK SUMMARY: $n hazards displayed ($n errors, 0 warnings)"
echo "========= ERROR SUMMARY: $n errors"
((n > 0)) && exit 99
exit $rc
EOF
chmod +x "$tmp/path/compute-sanitizer"
PATH=$tmp/path:$PATH FAKE_BAD=env_test PAIR_TIMEOUT=3 LOGDIR=$tmp/logs4 \
    bash "$b/run_all.sh" --sanitize memcheck,racecheck -j 4 'st' >"$tmp/san.out" 2>&1 && say "sanitize: exit 0 with failing pairs"
o=$tmp/san.out
expect "$o" '^memcheck +kernels/pass_test +errors=0 +hazards=- .* PASS$' "sanitize: memcheck pass"
expect "$o" '^racecheck +kernels/pass_test +errors=0 +hazards=0 .* PASS$' "sanitize: racecheck pass"
expect "$o" '^racecheck +properties/env_test +errors=1 +hazards=1 .* FAIL  \(sanitizer findings' "sanitize: finding"
expect "$o" '^memcheck +kernels/hang_test .* FAIL  \(timeout after 3 s' "sanitize: timeout"
expect "$o" '^run_all --sanitize: 2/10 pairs PASS' "sanitize: summary"

# 4. The command form (certify's children): one outcome line, CMD's exit status, the declared env set last.
engine_cmd() { # name expected-rc args...
    local name=$1 want=$2 rc
    shift 2
    bash "$b/engine.sh" run "$@" >"$tmp/cmd_$name.out" 2>&1
    rc=$?
    ((rc == want)) || say "command $name: exit $rc, expected $want"
}
engine_cmd pass 0 "$tmp/c_pass.log" 5 "$b/tests/kernels/pass_test.runfiles" -- "$b/tests/kernels/pass_test"
expect "$tmp/cmd_pass.out" '^engine: outcome=pass rc=0 ms=[0-9]+$' "command: pass"
expect "$tmp/c_pass.log" '^\[  PASSED  \] 3 tests' "command: the output goes to LOG"
engine_cmd fail 1 "$tmp/c_fail.log" 5 "" -- "$b/tests/kernels/fail_test"
expect "$tmp/cmd_fail.out" '^engine: outcome=fail rc=1 ' "command: fail"
engine_cmd crash 139 "$tmp/c_crash.log" 5 "" -- "$b/tests/kernels/crash_test"
expect "$tmp/cmd_crash.out" '^engine: outcome=crash\(SEGV\) rc=139 ' "command: crash"
engine_cmd hang 124 "$tmp/c_hang.log" 0.5 "" -- "$b/tests/kernels/hang_test"
expect "$tmp/cmd_hang.out" '^engine: outcome=timeout rc=124 ' "command: hang"
# KEY=VALUE set for the child; the declared env (ENV file) set after it, so it wins.
QSA_PROFILE=ieee engine_cmd env 0 --declared "$b/ENV" properties/env_test "$tmp/c_env.log" 5 "" QSA_PROFILE=none \
    -- "$b/tests/properties/env_test"
expect "$tmp/cmd_env.out" '^engine: outcome=pass rc=0 ' "command: declared env"
engine_cmd env_kv 0 "$tmp/c_kv.log" 5 "" QSA_PROFILE=fast -- "$b/tests/properties/env_test"
expect "$tmp/cmd_env_kv.out" '^engine: outcome=pass rc=0 ' "command: KEY=VALUE"
QSA_PROFILE=fast engine_cmd env_over 1 --declared "$b/ENV" kernels/pass_test "$tmp/c_over.log" 5 "" \
    QSA_PROFILE=ieee -- "$b/tests/properties/env_test"
expect "$tmp/cmd_env_over.out" '^engine: outcome=fail rc=1 ' "command: KEY=VALUE over the caller's env"
engine_cmd usage 2 "$tmp/c_u.log" 5 "" NOT-A-KV -- "$b/tests/kernels/pass_test"
expect "$tmp/cmd_usage.out" "^engine: 'NOT-A-KV' is not KEY=VALUE" "command: bad KEY=VALUE"
! grep -q '^engine: outcome=' "$tmp/cmd_usage.out" || say "command: an outcome line after a bad command line"
engine_cmd nocmd 2 "$tmp/c_n.log" 5 "" --
expect "$tmp/cmd_nocmd.out" '^engine: no command after --' "command: no command"

if ((fail == 0)); then echo "run_all_test: PASS"; else cat "$tmp"/*.out; fi
exit $fail

"""//tools:certify end to end without a GPU: the built binary in --cpu-dry-run mode against fake children.

The fakes are bash scripts this test writes under --bin-dir, each doing one thing per property, fixture test
or fake GPU (pass, fail like RapidCheck, crash, hang, bad exit, no JSON, exhaustive mismatches); certify launches
each through tools/engine.sh (installed as --bin-dir/tools/engine.sh), as run_all.sh does. Asserted are the
verdicts of certificate.json (read by //python:qsa_fixture's strict reader), its summary and certify's exit code
(0 PASS, 1 FAIL, 2 setup error, 3 refused), never a time: the one child meant to time out never ends, and the
--time-limit case has a first job that outlasts the limit. Levels come from checks/registry.tsv.

Run by hand: python3 tools/certify_e2e_test.py bazel-bin/tools/certify tools/engine.sh
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))  # run by hand
from qsa_fixture import levels, strict_json  # noqa: E402

# properties/contracts.bzl: the CPU property binaries of the contracts used here (--contracts=1 runs both).
CONTRACT_BINARIES = {1: ["differential_test", "decode_stages_test"], 2: ["layout_test"], 3: ["padding_test"]}
# What each fake binary lists (real registry names: certify takes their levels from the registry).
LISTED = {
    "differential_test": ["Differential.PrefillMatchesReference", "Differential.PrefillHostilePoolMatchesReference"],
    "decode_stages_test": ["DecodeStages.B1QPrepMatchesReference"],
    "layout_test": ["Layout.PrefillRowsObeyK4", "Layout.DecodeRowsObeyK4"],
    "padding_test": ["Padding.PaddedRowsAllMinusOneAndPoisonIgnored", "Padding.InvalidDecodeRowsAreInert",
                     "Padding.ContextLengthsOutsideRangeActClamped"],
}
# The fake "hang" property's two sleeps (seconds; distinct, so the test can look for them among the processes).
HANG_SLEEPS = ["613.25", "614.25"]
EXHAUSTIVE_CHECKS = ["bf16_to_float", "float_to_bf16", "float_to_half", "half_to_float", "rsqrt_rn"]
LEVELS = ["core", "hardened"]
# Contract section 9: profile-fast checks, one of each level, and the coverage line a fast check prints (common form:
# QSA_FAST <id> judged_elements= unjudged_elements= judged_rows= ambiguous_rows= eps_r=).
FAST_ID = "DecodeStages.B1QPrepWithinFastEnclosure"
HARD_FAST_ID = "DecodeStages.B1QPrepHostilePoolWithinFastEnclosure"


def fast_line(check_id, elements=1200000):
    return (f"QSA_FAST {check_id} judged_elements={elements} unjudged_elements=40 judged_rows=3000 ambiguous_rows=9 "
            "eps_r=2^-21")


def level_of(check_id):
    """Contract section 8: (level, profile) of a check: each is counted under its level, with its profile."""
    info = levels.lookup(check_id)
    assert info.registered, f"the test's own fake lists {check_id}, which checks/registry.tsv lacks"
    return info.level, info.profile


# ---- the fakes ------------------------------------------------------------------------------------------

def gtest_json(tests):
    """A gtest --gtest_output=json document; tests: (suite, name, status, result, [failure messages])."""
    suites = {}
    for suite, name, status, result, failures in tests:
        t = {"name": name, "status": status, "result": result}
        if failures:
            t["failures"] = [{"failure": f} for f in failures]
        suites.setdefault(suite, []).append(t)
    return strict_json.dump({"testsuites": [{"name": s, "testsuite": ts} for s, ts in suites.items()]})


def rapidcheck_failure(check_id, n):
    info = levels.lookup(check_id)
    return (f"prop.cc:1\nFalsifiable after {n} tests\n"
            f"QSA_CHECK_FAILED {check_id} level={info.level} profile={info.profile} contract={info.contract}\n"
            "shrunk: {1, 2}")


def property_behaviour(check_id, what):
    """The bash lines of one property of a fake binary; $json is its --gtest_output file."""
    suite, name = check_id.split(".", 1)

    def write(failures):
        return f"printf '%s' {quoted(gtest_json([(suite, name, 'RUN', 'COMPLETED', failures)]))} >\"$json\""
    return {
        "pass": [f"echo 'QSA_SEED {check_id} base=1 shard=0/1 seed=2 cases=17 of 17'", write([]), "exit 0"],
        # a fast check: its QSA_FAST line only when certify passed QSA_PROFILE=fast on to the child
        "pass_fast": [f"echo 'QSA_SEED {check_id} base=1 shard=0/1 seed=2 cases=17 of 17'",
                      f"[[ $QSA_PROFILE == fast ]] && echo '{fast_line(check_id)}'", write([]), "exit 0"],
        # a fast check that judged 5000 elements (its QSA_FAST line), then failed like RapidCheck
        "fail_fast": [f"[[ $QSA_PROFILE == fast ]] && echo '{fast_line(check_id, 5000)}'",
                      write([rapidcheck_failure(check_id, 3)]), "exit 1"],
        # a RapidCheck counterexample after 3 cases, the way prop.cc reports it
        "fail": [write([rapidcheck_failure(check_id, 3)]), "exit 1"],
        "fail_exit0": [write([rapidcheck_failure(check_id, 5)]), "exit 0"],  # the JSON says failed, the exit code 0
        "crash": [write([]), "kill -SEGV $$"],  # the JSON already says passed, then signal 11
        # the JSON already says passed, then never ends; a grandchild in the background and a child in the
        # foreground hold the log (the engine must kill the whole process group)
        "hang": [write([]), f"sleep {HANG_SLEEPS[0]} &", f"sleep {HANG_SLEEPS[1]}"],
        # passes only when launched as the engine launches a test: a fresh TEST_TMPDIR (also TMPDIR), the
        # undeclared-outputs directory, certify's RC_PARAMS, and the declared env of the bundle's ENV file set last
        "pass_declared": ['[[ -d $TEST_TMPDIR && $TMPDIR == "$TEST_TMPDIR" && -d $TEST_UNDECLARED_OUTPUTS_DIR ]] || '
                          '{ echo "not launched as bazel test launches it"; exit 5; }',
                          '[[ $QSA_DECLARED == from-env-file && $QSA_BUDGET_SCALE == 7 && $RC_PARAMS == *seed=* ]] || '
                          '{ echo "declared env: QSA_DECLARED=$QSA_DECLARED QSA_BUDGET_SCALE=$QSA_BUDGET_SCALE"; exit 6; }',
                          f"echo 'QSA_SEED {check_id} base=1 shard=0/1 seed=2 cases=17 of 17'", write([]), "exit 0"],
        "bad_exit": [write([]), "exit 3"],  # the JSON says passed, the exit code is 3
        "no_json": ["exit 0"],  # exit 0 and no gtest JSON at all (e.g. the filter matched nothing)
    }[what]


def quoted(text):
    """text in bash single quotes (the JSON documents the fakes write have no quote of their own)."""
    assert "'" not in text, text
    return "'" + text + "'"


def install(bindir, rel, lines):
    """A bash script of `lines` at bindir/rel."""
    p = os.path.join(bindir, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write("#!/bin/bash\n" + "\n".join(lines) + "\n")
    os.chmod(p, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP)


def fake_property_binary(bindir, test, behaviours, listed=None):
    """properties/<test>: lists `listed` (default LISTED[test]); behaviours: id -> what, or id -> {gpu: what}
    (gpu: certify's CUDA_VISIBLE_DEVICES for the child, "*" for any). Every run appends "id@gpu" to
    $FAKE_RAN."""
    listed = LISTED[test] if listed is None else listed
    listing = {}
    for i in listed:
        suite, name = i.split(".", 1)
        listing.setdefault(suite, []).append(name)
    lines = ['json=; filter=', 'for a in "$@"; do', '  case "$a" in', "  --gtest_list_tests)"]
    for suite, names in listing.items():
        lines.append(f"    echo '{suite}.'")
        lines += [f"    echo '  {n}'" for n in names]
    lines += ["    exit 0 ;;", '  --gtest_filter=*) filter=${a#--gtest_filter=} ;;',
              '  --gtest_output=json:*) json=${a#--gtest_output=json:} ;;', "  esac", "done",
              'echo "$filter@$CUDA_VISIBLE_DEVICES" >>"$FAKE_RAN"', 'case "$filter@$CUDA_VISIBLE_DEVICES" in']
    for check_id, what in behaviours.items():
        for gpu, w in (what.items() if isinstance(what, dict) else [("*", what)]):
            lines.append(f"{check_id}@{gpu})")
            lines += ["    " + line for line in property_behaviour(check_id, w)]
            lines.append("    ;;")
    lines += ["esac", 'echo "fake: no behaviour for $filter on GPU $CUDA_VISIBLE_DEVICES"', "exit 64"]
    install(bindir, os.path.join("properties", test), lines)


def fake_replay(bindir, tests, exit_code):
    """fixtures/replay_test: writes `tests` (gtest_json's tuples) as its gtest JSON, exits exit_code."""
    lines = ['json=', 'for a in "$@"; do', '  case "$a" in --gtest_output=json:*) json=${a#--gtest_output=json:} ;; esac',
             "done", 'echo "replay@$CUDA_VISIBLE_DEVICES" >>"$FAKE_RAN"',
             f"printf '%s' {quoted(gtest_json(tests))} >\"$json\"", f"exit {exit_code}"]
    install(bindir, os.path.join("fixtures", "replay_test"), lines)


def exhaustive_result(what):
    """exhaustive_primitives' --json document: every check exact, or one way of not being so."""
    checks = {c: {"device_function": "fake", "inputs": 65536, "expected_inputs": 65536, "mismatches": 0,
                  "examples": []} for c in EXHAUSTIVE_CHECKS}
    if what == "mismatch":
        checks["rsqrt_rn"].update(mismatches=2, examples=[{"input": "0x1", "got": "0x2", "want": "0x3"}])
    elif what == "missing_check":
        del checks["float_to_bf16"]
    elif what == "short_inputs":
        checks["half_to_float"]["inputs"] = 65535
    elif what != "pass":
        raise ValueError(what)
    return strict_json.dump({"checks": checks, "device": {"uuid": "FAKE"}})


def fake_exhaustive(bindir, per_gpu, sleep_s=0):
    """tools/exhaustive_primitives: per_gpu: gpu -> pass | mismatch | missing_check | short_inputs | no_json
    ("*" for any); exit 1 on a mismatch as the real one does; first sleeps sleep_s seconds when given."""
    lines = ['out=', 'for a in "$@"; do case "$a" in --json=*) out=${a#--json=} ;; esac; done',
             'echo "exhaustive@$CUDA_VISIBLE_DEVICES" >>"$FAKE_RAN"']
    if sleep_s:
        lines.append(f"sleep {sleep_s}")
    lines += ["echo 'progress 65536 65536'", 'case "$CUDA_VISIBLE_DEVICES" in']
    for gpu, what in per_gpu.items():
        body = ["exit 0"] if what == "no_json" else [
            f"printf '%s' {quoted(exhaustive_result(what))} >\"$out\"", f"exit {1 if what == 'mismatch' else 0}"]
        lines += [f"{gpu})"] + ["    " + b for b in body] + ["    ;;"]
    lines += ["esac", "exit 64"]
    install(bindir, os.path.join("tools", "exhaustive_primitives"), lines)


def all_pass(bindir, contracts):
    for c in contracts:
        for test in CONTRACT_BINARIES[c]:
            fake_property_binary(bindir, test, {i: "pass" for i in LISTED[test]})
    fake_replay(bindir, [("Replay", "prefill_a", "RUN", "COMPLETED", []),
                         ("Replay", "decode_b", "RUN", "COMPLETED", [])], 0)
    fake_exhaustive(bindir, {"*": "pass"})


# ---- running certify ------------------------------------------------------------------------------------

class Run:
    def __init__(self, rc, output, cert, ran, out):
        self.rc, self.output, self.cert, self.ran, self.out = rc, output, cert, ran, out

    def __repr__(self):  # in a failed assertion's message; the whole output is under "Captured stdout"
        return f"<certify exit {self.rc}, verdict {self.cert['verdict'] if self.cert else 'none (no certificate)'}>"

    def gpu(self, i=0):
        return self.cert["gpus"][i]

    def properties(self, gpu=0):
        return {p["id"]: p for c in self.gpu(gpu)["contracts"] for p in c["properties"]}

    def suite(self, rel, gpu=0):
        return next(s for s in self.gpu(gpu)["suites"] if s["binary"] == rel)

    def level(self, level, profile=None):
        return self.cert["levels"][level] if profile is None else self.cert["levels"][level]["profiles"][profile]

    def summary_printed(self):
        """certify's summary on stdout: from its "certify: certified: ..." line up to the next "certify:" line."""
        lines = self.output.splitlines()
        i = next(i for i, line in enumerate(lines) if line.startswith("certify: certified: "))
        j = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("certify: "))
        return [lines[i][len("certify: "):]] + [line.strip() for line in lines[i + 1:j]]

    def assert_summary(self, expected):
        """The summary, the same in certificate.json, on stdout and at the top of certificate.md."""
        assert self.cert["summary"] == expected, (self.cert["summary"], expected)
        assert self.cert["certified_line"] == expected[0], self.cert["certified_line"]
        assert self.summary_printed() == expected, (self.summary_printed(), expected)
        md = (self.out / "certificate.md").read_text()
        top = "\n\n".join([md.split("\n")[0], "**" + expected[0] + "**", "\n".join("- " + x for x in expected[1:])])
        assert md.startswith(top), (md[:len(top) + 200], top)


@pytest.fixture(scope="session")
def certify_exe(tmp_path_factory):
    """A copy of the built certify alone in a directory: no runfiles, no bundle beside it, so every child it
    starts is a fake of --bin-dir (a binary missing there is missing, not found elsewhere)."""
    src = os.environ["CERTIFY_E2E_BINARY"]
    dst = tmp_path_factory.mktemp("certify") / "certify"
    shutil.copy(src, dst)
    return str(dst)


@pytest.fixture
def work(tmp_path, certify_exe):
    """Runs certify against the fakes of bindir, with tools/engine.sh installed there (the --bin-dir place)."""
    bindir = tmp_path / "bin"
    (bindir / "tools").mkdir(parents=True)
    shutil.copy(os.environ["CERTIFY_E2E_ENGINE"], bindir / "tools" / "engine.sh")

    def run(*args, env=None, expect_certificate=True, exe=certify_exe):
        ran = tmp_path / "ran.log"
        out = tmp_path / "cert"
        e = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "FAKE_RAN": str(ran)}
        e.update(env or {})
        cmd = [exe, "--cpu-dry-run", f"--bin-dir={bindir}", f"--out={out}", "--progress=none", *args]
        p = subprocess.run(cmd, env=e, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=300, check=False)
        output = p.stdout.decode("utf-8", "replace")
        print(f"$ {' '.join(cmd)}  (exit {p.returncode})\n{output}")  # pytest shows it beside a failure
        path = out / "certificate.json"
        cert = None
        if path.exists():
            with open(path, "rb") as f:
                cert = strict_json.loads(f.read(), str(path))
        r = Run(p.returncode, output, cert, sorted(ran.read_text().split()) if ran.exists() else [], out)
        assert (cert is not None) == expect_certificate, r
        # The listing children's temporary logs (and their outputs directories) are gone.
        left = sorted(x for x in os.listdir(tmp_path) if x.startswith("certify-child-"))
        assert left == [], f"certify left in TMPDIR: {left}"
        return r

    run.bindir = str(bindir)
    return run


def failing(r, level, profile=None, gpu=None):
    """The checks a level (of that profile when given) lists as failing, by id (each entry's first word: "<check>
    (GPU n)", "<check> in <fixture test> (GPU n)"), sorted; only those of GPU `gpu` when given."""
    return sorted(f.split()[0] for f in r.level(level, profile)["failing"] if gpu is None or f"(GPU {gpu})" in f)


def assert_never_pass(r, check_id, gpu=0):
    """The property ran (or was due to) and FAILED: never PASS, never NOT_JUDGED; counted once, in its level with
    its profile, and in no other level or profile."""
    p = r.properties(gpu)[check_id]
    assert p["verdict"] == "FAIL", (check_id, p, r)
    level, profile = level_of(check_id)
    index = r.gpu(gpu)["index"]
    assert check_id in failing(r, level, profile, index), (check_id, level, profile, r.cert["levels"], r)
    for other in LEVELS:
        for prof in ["none", "ieee", "fast"]:
            if (other, prof) != (level, profile):
                assert check_id not in failing(r, other, prof, index), (check_id, other, prof, r.cert["levels"])
    assert r.level(level)["verdict"] == "FAIL", (level, r.cert["levels"], r)
    assert level not in r.cert["certified"], r.cert["certified_line"]


def assert_failed_overall(r):
    why = f"certify must FAIL this run (exit 1, verdict FAIL, the verdict line saying so); got {r!r}"
    assert r.rc == 1, why
    assert r.cert["verdict"] == "FAIL", why
    assert "certify: verdict FAIL" in r.output, why


# ---- (a) everything passes ------------------------------------------------------------------------------

def test_all_pass_gives_a_passing_certificate(work):
    all_pass(work.bindir, [1, 2, 3])
    r = work("--contracts=1,2,3", "--fake-gpus=2", "--jobs-per-gpu=2")
    assert r.rc == 0, r
    assert r.cert["verdict"] == "PASS", r
    assert "certify: verdict PASS" in r.output, r
    assert r.cert["dry_run"] is True
    for lv in LEVELS:
        assert r.level(lv)["verdict"] == "PASS", (lv, r.cert["levels"], r)
        assert r.level(lv)["failing"] == [], (lv, r.cert["levels"])
        assert r.level(lv, "fast")["verdict"] == "NOT JUDGED", (lv, r.cert["levels"])  # QSA_PROFILE=ieee
        assert r.level(lv, "none")["verdict"] == "PASS", (lv, r.cert["levels"])
    # Two GPUs: core none = 2 Layout + 1 Padding, core ieee = 2 properties + the exhaustive checks; hardened none =
    # 2 Padding, hardened ieee = 1 property; each on both GPUs.
    r.assert_summary(["certified: core (profiles none, ieee), hardened (profiles none, ieee)",
                      "core: PASS (profile none 6/6, ieee 6/6 checks; fast not judged)",
                      "hardened: PASS (profile none 4/4, ieee 2/2 checks; fast not judged)",
                      "fixture replay: 4/4 fixture tests pass"])
    assert r.cert["certified"] == ["core", "hardened"], r.cert["certified"]
    assert r.level("core")["judged_checks"] == 12, r.cert["levels"]
    expected = sorted(i for c in [1, 2, 3] for t in CONTRACT_BINARIES[c] for i in LISTED[t])
    for gi in (0, 1):
        gpu = r.gpu(gi)
        assert gpu["verdict"] == "PASS", gpu
        assert sorted(r.properties(gi)) == expected, r.properties(gi)
        for check_id, p in r.properties(gi).items():
            assert p["verdict"] == "PASS", p
            assert p["level"] == levels.lookup(check_id).level and p["profile"] == levels.lookup(check_id).profile, p
            assert p["cases_run"] == 17, p  # the fake's QSA_SEED line
        assert all(c["verdict"] == "PASS" for c in gpu["contracts"]), gpu["contracts"]
        assert r.suite("fixtures/replay_test", gi)["verdict"] == "PASS", gpu["suites"]
        assert gpu["exhaustive"]["verdict"] == "PASS", gpu["exhaustive"]
    # Each job ran exactly once on each GPU (CUDA_VISIBLE_DEVICES 0 and 1).
    assert r.ran == sorted([f"{i}@{g}" for i in expected for g in "01"] + ["replay@0", "replay@1"] +
                           ["exhaustive@0", "exhaustive@1"]), r.ran


def test_not_selected_is_not_judged_never_pass(work):
    """QSA_LEVELS=core QSA_PROFILE=none: hardened and ieee checks are not run (their fakes would fail) and
    read NOT_JUDGED / NOT JUDGED; the core level passes."""
    all_pass(work.bindir, [1, 2, 3])
    for test in ["differential_test", "decode_stages_test", "padding_test"]:
        fake_property_binary(work.bindir, test, {i: ("pass" if level_of(i) == ("core", "none") else "fail")
                                                 for i in LISTED[test]})
    fake_exhaustive(work.bindir, {"*": "mismatch"})
    r = work("--contracts=1,2,3", env={"QSA_LEVELS": "core", "QSA_PROFILE": "none"})
    assert r.rc == 0 and r.cert["verdict"] == "PASS", r
    assert r.level("core")["verdict"] == "PASS", r.cert["levels"]
    assert r.level("hardened")["verdict"] == "NOT JUDGED", r.cert["levels"]
    assert r.level("hardened")["certified"] is False, r.cert["levels"]
    assert r.level("hardened")["not_judged"] == [  # named, never passed
        "Padding.ContextLengthsOutsideRangeActClamped (GPU 0)", "Padding.InvalidDecodeRowsAreInert (GPU 0)",
        "Differential.PrefillHostilePoolMatchesReference (GPU 0)"], r.cert["levels"]
    for lv in LEVELS:
        for prof in ["ieee", "fast"]:
            assert r.level(lv, prof)["verdict"] == "NOT JUDGED", (lv, prof, r.cert["levels"])
    assert "Exhaustive.Primitives (GPU 0)" in r.level("core", "ieee")["not_judged"], r.cert["levels"]
    r.assert_summary(["certified: core (profile none); not certified: hardened (NOT JUDGED)",
                      "core: PASS (profile none 3/3 checks; ieee, fast not judged)",
                      "hardened: NOT JUDGED (QSA_LEVELS=core)",
                      "fixture replay: 2/2 fixture tests pass"])
    for check_id, p in r.properties().items():
        if level_of(check_id) == ("core", "none"):
            assert p["verdict"] == "PASS", p
        else:
            assert p["verdict"] == "NOT_JUDGED", p
            assert not any(x.startswith(check_id + "@") for x in r.ran), (check_id, r.ran)
            assert f"QSA_NOT_JUDGED {check_id} " in r.output, r
    assert r.gpu()["exhaustive"]["verdict"] == "NOT_JUDGED", r.gpu()["exhaustive"]
    assert "exhaustive@0" not in r.ran, r.ran
    contracts = {c["number"]: c["verdict"] for c in r.gpu()["contracts"] if c["binary"] == "properties/differential_test"}
    assert contracts == {1: "NOT_JUDGED"}, r.gpu()["contracts"]


def test_fast_profile_is_judged_from_qsa_fast_lines(work):
    """QSA_PROFILE=fast (contract section 9): certify passes it on to every child; fast and none checks are judged,
    ieee ones are not; core reads PASS with the summed QSA_FAST figures. The same fast check passing WITHOUT its
    QSA_FAST line makes core (and the certificate) FAIL: never a vacuous pass."""
    listed = LISTED["decode_stages_test"] + [FAST_ID]
    all_pass(work.bindir, [1, 2, 3])
    fake_property_binary(work.bindir, "decode_stages_test", {FAST_ID: "pass_fast", listed[0]: "fail"}, listed)
    fake_property_binary(work.bindir, "differential_test", {i: "fail" for i in LISTED["differential_test"]})
    fake_exhaustive(work.bindir, {"*": "mismatch"})  # ieee: not judged under fast
    r = work("--contracts=1,2,3", env={"QSA_PROFILE": "fast"})
    assert r.rc == 0, r
    r.assert_summary(["certified: core (profiles none, fast), hardened (profile none)",
                      "core: PASS (profile none 3/3, fast 1/1 checks, 1.2M elements judged at eps_r 2^-21; "
                      "ieee not judged)",
                      "hardened: PASS (profile none 2/2 checks; no fast check ran; ieee not judged)",
                      "fixture replay: 2/2 fixture tests pass"])
    fast = r.level("core", "fast")
    assert fast["judged_checks"] == 1 and r.level("core")["fast"]["judged_elements"] == 1200000, r.cert["levels"]
    assert "fast" not in r.level("hardened"), r.cert["levels"]  # no QSA_FAST line of its own
    assert r.properties()[FAST_ID]["verdict"] == "PASS", r.properties()
    assert r.properties()[FAST_ID]["fast"] == [fast_line(FAST_ID)], r.properties()[FAST_ID]
    assert r.properties()[listed[0]]["verdict"] == "NOT_JUDGED", r.properties()

    fake_property_binary(work.bindir, "decode_stages_test", {FAST_ID: "pass", listed[0]: "fail"}, listed)
    r = work("--contracts=1,2,3", env={"QSA_PROFILE": "fast"})
    assert_failed_overall(r)
    assert r.level("core", "fast")["verdict"] == "FAIL", r.cert["levels"]
    assert r.level("core", "fast")["failing"] == [FAST_ID + " passed without a QSA_FAST line (GPU 0)"], r.cert["levels"]
    assert r.cert["summary"][:2] == ["certified: hardened (profile none); not certified: core (1 check fails)",
                                     "core: FAIL (1 check: 1 profile fast; ieee not judged)"], r.cert["summary"]


def test_hardened_fast_failure_leaves_core_certified(work):
    """The case that read like a numerics failure: under QSA_PROFILE=fast core passes (its two fast checks' QSA_FAST
    lines summed) while hardened fails, two checks of profile none and two of profile fast (one without a QSA_FAST
    line, one whose line still counts under hardened): each counted under hardened, with its profile; core is
    certified; certificate.md lists each failure with its level and profile."""
    b2, hard_diff = "DecodeStages.B2LogitsWithinFastEnclosure", "Differential.PrefillHostilePoolWithinFastEnclosure"
    all_pass(work.bindir, [1, 2, 3])
    fake_property_binary(work.bindir, "decode_stages_test",
                         {FAST_ID: "pass_fast", b2: "pass_fast", HARD_FAST_ID: "fail"},
                         LISTED["decode_stages_test"] + [FAST_ID, b2, HARD_FAST_ID])
    fake_property_binary(work.bindir, "differential_test", {hard_diff: "fail_fast"},
                         LISTED["differential_test"] + [hard_diff])
    fake_property_binary(work.bindir, "padding_test", {
        "Padding.PaddedRowsAllMinusOneAndPoisonIgnored": "pass", "Padding.InvalidDecodeRowsAreInert": "fail",
        "Padding.ContextLengthsOutsideRangeActClamped": "fail"})
    r = work("--contracts=1,2,3", env={"QSA_PROFILE": "fast"})
    assert_failed_overall(r)
    for check_id in [HARD_FAST_ID, hard_diff, "Padding.InvalidDecodeRowsAreInert",
                     "Padding.ContextLengthsOutsideRangeActClamped"]:
        assert_never_pass(r, check_id)
    r.assert_summary(["certified: core (profiles none, fast); not certified: hardened (4 checks fail)",
                      "core: PASS (profile none 3/3, fast 2/2 checks, 2.4M elements judged at eps_r 2^-21; "
                      "ieee not judged)",
                      "hardened: FAIL (4 checks: 2 profile none, 2 fast; 5.0k elements judged at eps_r 2^-21; "
                      "ieee not judged)",
                      "fixture replay: 2/2 fixture tests pass"])
    assert r.cert["certified"] == ["core"], r.cert["certified"]
    assert r.level("core")["failing"] == [], r.cert["levels"]
    fast = r.level("core")["fast"]
    assert (fast["qsa_fast_lines"], fast["judged_elements"], fast["unjudged_elements"]) == (2, 2400000, 80), fast
    assert r.level("hardened")["fast"]["judged_elements"] == 5000, r.cert["levels"]
    assert r.level("hardened", "fast")["failing"] == [HARD_FAST_ID + " (GPU 0)", hard_diff + " (GPU 0)"], r.cert
    assert r.level("hardened", "none")["failed_checks"] == 2, r.cert["levels"]
    assert r.level("core", "ieee")["not_judged"] == [  # named, never passed
        "DecodeStages.B1QPrepMatchesReference (GPU 0)", "Differential.PrefillMatchesReference (GPU 0)",
        "Exhaustive.Primitives (GPU 0)"], r.cert["levels"]
    md = (r.out / "certificate.md").read_text()
    assert (f"- hardened, profile fast: FAIL, 0/2 checks pass\n  - FAIL: {HARD_FAST_ID} (GPU 0)\n"
            f"  - FAIL: {hard_diff} (GPU 0)\n") in md, md
    assert "`Padding.InvalidDecodeRowsAreInert` [level=hardened profile=none]" in md, md


# ---- (b) failure paths ----------------------------------------------------------------------------------

def test_failures_fail_their_property_gpu_and_level(work):
    """Three fake GPUs: 0 passes everything; on 1 a core and a hardened property fail like RapidCheck; on 2 (c)
    a child is killed by signal 11, one exits 3, one exits 0 with a failure in its JSON and one exits 0 without
    any JSON. Each FAILS (whatever its gtest JSON said before), and so do its GPU and level; GPU 0 PASSES."""
    all_pass(work.bindir, [2, 3])
    fake_property_binary(work.bindir, "layout_test", {
        "Layout.PrefillRowsObeyK4": {"0": "pass", "1": "pass", "2": "no_json"},
        "Layout.DecodeRowsObeyK4": {"0": "pass", "1": "fail", "2": "fail_exit0"}})
    fake_property_binary(work.bindir, "padding_test", {
        "Padding.PaddedRowsAllMinusOneAndPoisonIgnored": {"0": "pass", "1": "pass", "2": "crash"},
        "Padding.InvalidDecodeRowsAreInert": {"0": "pass", "1": "fail", "2": "bad_exit"},
        "Padding.ContextLengthsOutsideRangeActClamped": "pass"})
    r = work("--contracts=2,3", "--fake-gpus=3")
    assert_failed_overall(r)
    assert [r.gpu(g)["verdict"] for g in range(3)] == ["PASS", "FAIL", "FAIL"], r
    assert all(p["verdict"] == "PASS" for p in r.properties(0).values()), r.properties(0)
    assert failing(r, "core", gpu=0) == [] and failing(r, "hardened", gpu=0) == [], r.cert["levels"]
    # GPU 1: RapidCheck counterexamples
    assert_never_pass(r, "Layout.DecodeRowsObeyK4", gpu=1)  # core
    assert_never_pass(r, "Padding.InvalidDecodeRowsAreInert", gpu=1)  # hardened
    props = r.properties(1)
    assert props["Layout.DecodeRowsObeyK4"]["cases_run"] == 3  # "Falsifiable after 3 tests"
    assert any("QSA_CHECK_FAILED Layout.DecodeRowsObeyK4" in f
               for f in props["Layout.DecodeRowsObeyK4"]["failures"]), props
    assert props["Layout.PrefillRowsObeyK4"]["verdict"] == "PASS"
    assert r.level("core", "ieee")["verdict"] == "PASS", r.cert["levels"]  # the exhaustive checks
    assert failing(r, "core", gpu=1) == ["Layout.DecodeRowsObeyK4"], r.cert["levels"]
    assert failing(r, "hardened", gpu=1) == ["Padding.InvalidDecodeRowsAreInert"], r.cert["levels"]
    verdicts = {c["binary"]: c["verdict"] for c in r.gpu(1)["contracts"]}
    assert verdicts == {"properties/layout_test": "FAIL", "properties/padding_test": "FAIL"}, verdicts
    # GPU 2: children that crash, exit non-zero or lie
    props = r.properties(2)
    for check_id in ["Padding.PaddedRowsAllMinusOneAndPoisonIgnored", "Padding.InvalidDecodeRowsAreInert",
                     "Layout.PrefillRowsObeyK4", "Layout.DecodeRowsObeyK4"]:
        assert_never_pass(r, check_id, gpu=2)
    # The engine's verdict (run_all.sh's crash(SEGV)), the signal named.
    assert "signal 11" in props["Padding.PaddedRowsAllMinusOneAndPoisonIgnored"]["exit"], props
    assert "crash(SEGV)" in props["Padding.PaddedRowsAllMinusOneAndPoisonIgnored"]["exit"], props
    assert props["Padding.InvalidDecodeRowsAreInert"]["exit"] == "exit 3", props
    assert props["Padding.ContextLengthsOutsideRangeActClamped"]["verdict"] == "PASS", props
    assert r.level("core")["verdict"] == "FAIL" and r.level("hardened")["verdict"] == "FAIL", r.cert["levels"]


def test_property_missing_from_registry_is_run_and_fails(work):
    """A listed property without a registry row is run even when QSA_LEVELS selects nothing it could belong
    to (prop.cc fails it: "has no row in checks/registry.tsv"); it fails the certificate."""
    all_pass(work.bindir, [2])
    listed = LISTED["layout_test"] + ["Layout.NotInRegistry"]
    assert not levels.lookup("Layout.NotInRegistry").registered
    fake_property_binary(work.bindir, "layout_test",
                         {"Layout.PrefillRowsObeyK4": "pass", "Layout.DecodeRowsObeyK4": "pass",
                          "Layout.NotInRegistry": "fail"}, listed=listed)
    r = work("--contracts=2", env={"QSA_LEVELS": "hardened"})
    assert_failed_overall(r)
    p = r.properties()["Layout.NotInRegistry"]
    assert p["verdict"] == "FAIL", p
    assert p["level"] == p["profile"] == "unregistered", p
    assert "Layout.NotInRegistry@0" in r.ran, r.ran
    for check_id in LISTED["layout_test"]:  # core checks under QSA_LEVELS=hardened: not run, not passed
        assert r.properties()[check_id]["verdict"] == "NOT_JUDGED", r.properties()
    assert r.gpu()["verdict"] == "FAIL", r.gpu()
    assert r.level("core")["verdict"] == "NOT JUDGED", r.cert["levels"]
    # No level of its own: counted once, in the level judged, profile none.
    assert failing(r, "hardened", "none") == ["Layout.NotInRegistry"], r.cert["levels"]
    assert r.cert["certified"] == [], r.cert["certified_line"]


def sleeps_alive():
    """The fake hang's sleeps still running (their command lines, from /proc)."""
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args[:1] == [b"sleep"] and args[1:2] and args[1].decode() in HANG_SLEEPS:
            alive.append(" ".join(a.decode() for a in args if a))
    return alive


def test_timed_out_property_is_a_failure(work):
    """(c) a child that never ends is killed after --child-timeout, with its process group (a grandchild in the
    background, a child in the foreground), and FAILS (its JSON said passed)."""
    assert sleeps_alive() == [], sleeps_alive()
    all_pass(work.bindir, [3])
    fake_property_binary(work.bindir, "padding_test", {"Padding.InvalidDecodeRowsAreInert": "hang"},
                         listed=["Padding.InvalidDecodeRowsAreInert"])
    r = work("--contracts=3", "--child-timeout=0.5", "--no-replay", "--no-exhaustive")
    assert_failed_overall(r)
    assert_never_pass(r, "Padding.InvalidDecodeRowsAreInert")
    assert "timed out" in r.properties()["Padding.InvalidDecodeRowsAreInert"]["exit"], r.properties()
    assert "engine: timeout" in r.properties()["Padding.InvalidDecodeRowsAreInert"]["exit"], r.properties()
    for _ in range(40):  # SIGTERM reached the whole group; give the kernel a moment to reap them
        if not sleeps_alive():
            break
        time.sleep(0.05)
    assert sleeps_alive() == [], f"left running after certify ended: {sleeps_alive()}"
    assert r.level("core")["verdict"] == "NONE RUN", r.cert["levels"]  # nothing of it ran
    assert r.cert["certified_line"] == ("certified: none; not certified: core (no check judged), hardened (1 check "
                                        "fails)"), r.cert["certified_line"]


def test_replay_failed_skipped_and_not_run_tests(work):
    """The fixture replay: each failed fixture counts in the groups of the checks it names (Fixture.Layout
    core, Fixture.Differential ieee, Fixture.InvalidDecodeRows hardened), a failed one that names no check in the
    first selected level, profile none; a skipped fixture is NOT_JUDGED, a NOTRUN one is no result; the suite
    FAILS."""
    all_pass(work.bindir, [2])
    bad = ("fixture bad\nQSA_CHECK_FAILED Fixture.Layout level=core profile=none contract=2 fixture=b\n"
           "QSA_CHECK_FAILED Fixture.Differential level=core profile=ieee contract=1 fixture=b\n")
    hard = "QSA_CHECK_FAILED Fixture.InvalidDecodeRows level=hardened profile=none contract=3 fixture=h\n"
    fake_replay(work.bindir, [("Replay", "a", "RUN", "COMPLETED", []), ("Replay", "b", "RUN", "COMPLETED", [bad]),
                              ("Replay", "h", "RUN", "COMPLETED", [hard]), ("Replay", "c", "RUN", "SKIPPED", []),
                              ("Replay", "d", "NOTRUN", "SUPPRESSED", []),
                              ("Replay", "e", "RUN", "COMPLETED", ["fixture e: no check named"])], 1)
    r = work("--contracts=2")
    assert_failed_overall(r)
    s = r.suite("fixtures/replay_test")
    assert s["verdict"] == "FAIL", s
    tests = {t["id"]: t for t in s["tests"]}
    assert {i: t["verdict"] for i, t in tests.items()} == {
        "Replay.a": "PASS", "Replay.b": "FAIL", "Replay.h": "FAIL", "Replay.c": "NOT_JUDGED", "Replay.e": "FAIL"}, tests
    assert r.level("core", "none")["failing"] == [  # each where its check says
        "Fixture.Layout in Replay.b (GPU 0)", "Replay.e (GPU 0)"], r.cert["levels"]
    assert failing(r, "core", "ieee") == ["Fixture.Differential"], r.cert["levels"]
    assert r.level("hardened", "none")["failing"] == ["Fixture.InvalidDecodeRows in Replay.h (GPU 0)"], r.cert["levels"]
    assert all(r.level(lv)["verdict"] == "FAIL" for lv in LEVELS), r.cert["levels"]
    assert all(r.level(lv, "fast")["verdict"] == "NOT JUDGED" for lv in LEVELS), r.cert["levels"]  # QSA_PROFILE=ieee
    assert r.cert["fixture_replay"] == {"tests": 5, "passed": 1, "failed": 3, "not_judged": 1}, r.cert
    assert r.cert["summary"][-1] == ("fixture replay: 1/4 fixture tests pass, 1 not judged (the checks they fail "
                                     "are counted in their levels above)"), r.cert["summary"]


@pytest.mark.parametrize("tests,exit_code,installed", [
    ([("Replay", "a", "RUN", "COMPLETED", [])], 1, True),  # every test passed, exit 1
    ([], 0, True),  # exit 0, no test at all
    ([("Replay", "a", "RUN", "COMPLETED", [])], 0, False),  # no replay binary
])
def test_replay_that_did_not_run_properly_fails(work, tests, exit_code, installed):
    all_pass(work.bindir, [2])
    if installed:
        fake_replay(work.bindir, tests, exit_code)
    else:
        os.remove(os.path.join(work.bindir, "fixtures", "replay_test"))
    r = work("--contracts=2")
    assert_failed_overall(r)
    s = r.suite("fixtures/replay_test")
    assert s["verdict"] == "FAIL" and s["error"], s
    assert any("fixture replay" in f for f in r.level("core")["failing"]), r.cert["levels"]
    assert r.level("core")["verdict"] == "FAIL", r.cert["levels"]


def test_exhaustive_mismatches_fail_ieee(work):
    """Four fake GPUs, four ways of not being exact: a mismatch, a missing check, fewer inputs than expected,
    no result file; each GPU FAILS, under core, profile ieee."""
    all_pass(work.bindir, [])
    fake_exhaustive(work.bindir, {"0": "mismatch", "1": "missing_check", "2": "short_inputs", "3": "no_json"})
    r = work("--exhaustive-only", "--fake-gpus=4")
    assert_failed_overall(r)
    for gi in range(4):
        assert r.gpu(gi)["exhaustive"]["verdict"] == "FAIL", (gi, r.gpu(gi)["exhaustive"])
        assert r.gpu(gi)["verdict"] == "FAIL", gi
    for gi in range(4):
        assert failing(r, "core", "ieee", gi) == ["Exhaustive.Primitives"], (gi, r.cert["levels"])
    assert r.level("core", "ieee")["verdict"] == "FAIL", r.cert["levels"]
    assert r.level("core")["verdict"] == "FAIL" and r.level("hardened")["verdict"] == "NONE RUN", r.cert["levels"]
    assert r.cert["certified_line"] == ("certified: none; not certified: core (4 checks fail), hardened (no check "
                                        "judged)"), r.cert["certified_line"]


# ---- (d) --time-limit ---------------------------------------------------------------------------------

def test_time_limit_leaving_jobs_unrun_never_passes(work):
    """One worker; the first job (the exhaustive checks) sleeps 0.5 s, past the 0.001-minute limit, so every
    later job starts late: it is recorded FAIL, not run, and so is the certificate, though every fake passes."""
    all_pass(work.bindir, [2, 3])
    fake_exhaustive(work.bindir, {"*": "pass"}, sleep_s=0.5)
    r = work("--contracts=2,3", "--jobs-per-gpu=1", "--time-limit=0.001")
    assert_failed_overall(r)
    props = r.properties()
    assert set(props) == set(LISTED["layout_test"] + LISTED["padding_test"]), props
    for check_id, p in props.items():
        assert p["exit"] == "not run", p
        assert_never_pass(r, check_id)
    s = r.suite("fixtures/replay_test")
    assert s["verdict"] == "FAIL" and "not run" in s["error"], s
    assert r.level("core")["verdict"] == "FAIL" and r.level("hardened")["verdict"] == "FAIL", r.cert["levels"]
    assert [x for x in r.ran if not x.startswith("exhaustive@")] == [], r.ran  # nothing else started


# ---- setup errors and refusals: a documented exit code, no certificate ------------------------------------

@pytest.mark.parametrize("case,rc", [("listing fails", 2), ("binary missing", 2), ("engine missing", 2),
                                     ("no SASS", 3)])
def test_setup_errors_and_refusals(work, case, rc):
    """Exit 2 when a property binary cannot list its properties or is missing, or when tools/engine.sh (which
    launches every child) is nowhere; 3 when the GPU has no SASS (nothing runs)."""
    all_pass(work.bindir, [2])
    if case == "listing fails":
        install(work.bindir, "properties/layout_test", ["echo 'cannot list'", "exit 1"])
    if case == "engine missing":
        os.remove(os.path.join(work.bindir, "tools", "engine.sh"))
    args = {"binary missing": ["--contracts=3"], "no SASS": ["--contracts=2", "--fake-sm=70"]}
    r = work(*args.get(case, ["--contracts=2"]), expect_certificate=False)
    assert r.rc == rc, r
    if case in ("no SASS", "engine missing"):
        assert r.ran == [], r.ran
    if case == "engine missing":
        assert re.search(r"^certify: tools/engine.sh \(the launcher of every child\) not found", r.output, re.M), r


def test_bundle_declared_env_is_set_last(work, certify_exe, tmp_path):
    """certify as it runs from a GPU bundle (MANIFEST and COMMIT beside it, engine.sh at its root as gpu_bundle.sh
    puts it, none in --bin-dir): the engine sets each child's declared env from the bundle's ENV file, last (over
    certify's own QSA_BUDGET_SCALE), as run_all.sh does; a child not named there gets none of it."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    exe = shutil.copy(certify_exe, bundle / "certify")
    shutil.move(os.path.join(work.bindir, "tools", "engine.sh"), bundle / "engine.sh")
    (bundle / "MANIFEST").write_text("tests properties/layout_test\n")
    (bundle / "COMMIT").write_text("fake-commit\n")
    (bundle / "ENV").write_text("properties/layout_test QSA_DECLARED=from-env-file\n"
                                "properties/layout_test QSA_BUDGET_SCALE=7\n")
    all_pass(work.bindir, [2, 3])
    fake_property_binary(work.bindir, "layout_test", {i: "pass_declared" for i in LISTED["layout_test"]})
    fake_property_binary(work.bindir, "padding_test", {i: "pass_declared" for i in LISTED["padding_test"]})
    r = work("--contracts=2,3", "--no-replay", "--no-exhaustive", exe=str(exe))
    assert r.cert["git"] == {"commit": "fake-commit", "source": "bundle"}, r.cert["git"]
    verdicts = {i: p["verdict"] for i, p in r.properties().items()}
    assert verdicts == {**{i: "PASS" for i in LISTED["layout_test"]}, **{i: "FAIL" for i in LISTED["padding_test"]}}, \
        verdicts
    assert all(p["exit"] == "exit 6" for i, p in r.properties().items() if i in LISTED["padding_test"]), \
        r.properties()


if __name__ == "__main__":
    os.environ["CERTIFY_E2E_BINARY"] = os.path.abspath(sys.argv[1])
    os.environ["CERTIFY_E2E_ENGINE"] = os.path.abspath(sys.argv[2])
    base = os.path.join(os.environ.get("TEST_TMPDIR") or tempfile.mkdtemp(prefix="certify_e2e_"), "pytest")
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", f"--basetemp={base}", os.path.abspath(__file__)] +
                         sys.argv[3:]))

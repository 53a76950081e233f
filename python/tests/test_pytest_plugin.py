"""The pytest plugin (qsa_fixture.pytest_plugin, loaded with -p as an uninstalled package is): one item per
fixture, the NumPy implementation passes every curated fixture, a broken callable fails with the replay
report and the level/profile of each failed check, the problems of impl_errors_test are one line, and
profile fast hands the outputs to the qsa binary (a fake one here: `qsa replay --profile fast --outputs`
does not exist yet) or stops before collecting when there is none."""
import os

import pytest

from bad_impls import CASES
from common import HERE, cases_dir, curated_cases, repo_root, run_python
from qsa_fixture import compare_outputs, numpy_impl, read_fixture
from qsa_fixture.__main__ import load_output_arrays


def pytest_run(args, cwd=None, env_extra=None):
    p = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-p", "qsa_fixture.pytest_plugin", "-rfs", *args], HERE,
                   cwd=cwd or repo_root(), env_extra=env_extra)
    return p.returncode, p.stdout + p.stderr


def test_numpy_impl_passes_every_curated_fixture():
    rc, out = pytest_run(["-q", "--qsa-impl", "qsa_fixture.numpy_impl:run"])  # default corpus: fixtures/cases
    assert rc == 0 and f"{len(curated_cases())} passed" in out, out


def test_broken_callable_fails_with_the_report():
    fx, ok = (os.path.join(cases_dir(), n) for n in ("prefill_ties_relu_zero_bf16", "hand_prefill_ctx_0_1_2_3"))
    rc, out = pytest_run(["-q", "--qsa-impl", "bad_impls:tie_bug", "--qsa-corpus", fx, "--qsa-corpus", ok])
    assert rc == 1 and "1 failed, 1 passed" in out, out
    assert f"  QSA_CHECK_FAILED Fixture.Differential level=core profile=ieee contract=1 fixture={fx}: " in out, out
    assert "equal logits, the contract orders them by ascending block id" in out, out  # the report
    assert "Traceback" not in out and "qsa_fixture/" not in out, out


@pytest.mark.parametrize("name,detail", [c for c in CASES if c[0] in ("raises", "hangs", "pool_as_float32",
                                                                        "out_idx_short")])
def test_impl_problems_are_one_line(name, detail):
    fx = os.path.join(cases_dir(), "prefill_random_pool_half")
    rc, out = pytest_run(["-q", "--qsa-impl", f"bad_impls:{name}", "--qsa-corpus", fx, "--qsa-timeout", "1"])
    assert rc == 1 and "1 failed" in out, out
    assert f"\nFAIL {fx}: FAIL: {detail} level=core profile=none contract=0 (Fixture.Api)\n" in out, out
    assert "Traceback" not in out and "qsa_fixture/" not in out, out


def test_usage_errors_before_collecting(tmp_path):
    rc, out = pytest_run(["--qsa-impl", "qsa_fixture.numpy_impl:run", "--qsa-profile", "fast"])
    assert rc == 4 and "ERROR: --qsa-profile fast needs the qsa binary: pass --qsa-bin PATH or set QSA_BIN" in out \
        and "collected" not in out, out
    rc, out = pytest_run(["--qsa-impl", "qsa_fixture.numpy_impl:run"], cwd=str(tmp_path))
    assert rc == 4 and f"ERROR: --qsa-corpus DIR is required: {tmp_path} is not inside the QSA repository" in out, out
    rc, out = pytest_run(["--qsa-corpus", str(tmp_path)])
    assert rc == 4 and "ERROR: --qsa-corpus need --qsa-impl MODULE:FUNCTION" in out, out
    rc, out = pytest_run(["--qsa-impl", "nope:run"])
    assert rc == 4 and "ERROR: --impl nope:run: cannot import module 'nope': ModuleNotFoundError" in out, out


FAKE_QSA = """#!/bin/sh
# A stand-in for `qsa replay --profile fast --outputs OUTDIR FIXTURE`: logs its arguments, keeps a copy of
# OUTDIR, answers as $FAKE_MODE says.
echo "$@" >> "$FAKE_LOG"
cp -r "$5" "$FAKE_KEEP/$(basename "$6")"
case "$FAKE_MODE" in
pass) echo "PASS $6"; echo "1 of 1 fixtures pass";;
fail) echo "FAIL $6: FAIL: kbar (b=0, g=1) element 5 outside its interval [level=core profile=fast]"
      echo "  QSA_CHECK_FAILED Differential.PrefillWithinFastEnclosure level=core profile=fast contract=1 fixture=$6: kbar"
      exit 1;;
notjudged) echo "NOT_JUDGED $6 (inputs level hardened)";;
*) echo "qsa: unknown option --outputs" >&2; exit 2;;
esac
"""


@pytest.fixture
def fake_qsa(tmp_path):
    p = tmp_path / "qsa"
    p.write_text(FAKE_QSA)
    p.chmod(0o755)
    (tmp_path / "keep").mkdir()
    return str(p), {"FAKE_LOG": str(tmp_path / "log"), "FAKE_KEEP": str(tmp_path / "keep")}


def test_fast_profile_hands_the_outputs_to_the_binary(fake_qsa, tmp_path):
    qsa, env = fake_qsa
    names = ["prefill_random_pool_half", "decode_ctx_1_3_4_5_split_half"]
    fxs = [os.path.join(cases_dir(), n) for n in names]
    corpus = sum((["--qsa-corpus", fx] for fx in fxs), [])
    rc, out = pytest_run(["-q", "--qsa-impl", "qsa_fixture.numpy_impl:run", "--qsa-profile", "fast", "--qsa-bin", qsa]
                         + corpus, env_extra=dict(env, FAKE_MODE="pass"))
    assert rc == 0 and "2 passed" in out, out
    log = (tmp_path / "log").read_text().splitlines()
    for line, fx in zip(log, fxs):
        a = line.split()
        assert a[:4] == ["replay", "--profile", "fast", "--outputs"] and a[5] == fx and len(a) == 6, line
    for n, fx in zip(names, fxs):  # the files the binary was given are the callable's outputs
        f = read_fixture(fx)
        got, _ = load_output_arrays(str(tmp_path / "keep" / n))
        assert sorted(got) == sorted(numpy_impl.run(f)), sorted(got)
        assert compare_outputs(f, got).passed
    # QSA_BIN instead of --qsa-bin; the binary's failure is the item's, its lines verbatim.
    rc, out = pytest_run(["-q", "--qsa-impl", "qsa_fixture.numpy_impl:run", "--qsa-profile", "fast"] + corpus[:2],
                         env_extra=dict(env, FAKE_MODE="fail", QSA_BIN=qsa))
    assert rc == 1 and "1 failed" in out and f"FAIL {fxs[0]} (profile fast, judged by {qsa}):" in out and \
        "QSA_CHECK_FAILED Differential.PrefillWithinFastEnclosure level=core profile=fast contract=1" in out, out
    rc, out = pytest_run(["-q", "--qsa-impl", "qsa_fixture.numpy_impl:run", "--qsa-profile", "fast"] + corpus[:2],
                         env_extra=dict(env, FAKE_MODE="notjudged", QSA_BIN=qsa))
    assert rc == 0 and "1 skipped" in out and "NOT JUDGED" in out, out
    rc, out = pytest_run(["-q", "--qsa-impl", "qsa_fixture.numpy_impl:run", "--qsa-profile", "fast"] + corpus[:2],
                         env_extra=dict(env, FAKE_MODE="old", QSA_BIN=qsa))
    assert rc == 1 and "exited with status 2: qsa: unknown option --outputs" in out, out
    # Profile-none checks are judged in Python first: a broken callable never reaches the binary.
    rc, out = pytest_run(["-q", "--qsa-impl", "bad_impls:raises", "--qsa-profile", "fast"] + corpus[:2],
                         env_extra=dict(env, FAKE_MODE="pass", QSA_BIN=qsa))
    assert rc == 1 and "the implementation threw: KeyError: 'out_idx' level=core profile=none" in out, out
    assert len((tmp_path / "log").read_text().splitlines()) == 2 + 3

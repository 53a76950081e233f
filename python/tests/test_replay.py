"""Replay: the Python replay's lines and reports equal the C++ tool's (`qsa replay`, `qsa diff FIXTURE
OUTDIR`) on mismatching outputs; a tie-break bug is reported with its contract. (The NumPy implementation
passes every curated fixture bit for bit: pytest_plugin_test.)"""
import contextlib
import io
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from bad_impls import tie_bug
from common import built_binary, cases_dir, qsa_bin
from qsa_fixture import __main__ as cli
from qsa_fixture import read_fixture, replay


def run_py_cli(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(list(args))
    return rc, out.getvalue()


def expected_as_outputs(f):
    return {k: np.array(v, copy=True) for k, v in f.expected.items()}


def swap_first_two_selected(out, row_index):
    r = out.reshape(-1, out.shape[-1])[row_index]
    r[0:4], r[4:8] = r[4:8].copy(), r[0:4].copy()


def mut_order(o, f):  # prefill: same set, two blocks swapped (the emission order breaks)
    ctx = f.inputs["context_lengths"]
    b = int(np.argmax(ctx))
    swap_first_two_selected(o["out_idx"], b * f.seq_len + int(ctx[b]) - 1)


def mut_padding(o, f):
    ctx = f.inputs["context_lengths"]
    b = int(np.argmin(ctx))
    o["out_idx"][b, f.seq_len - 1, 5] = 3


def mut_layout(o, f):
    ctx = f.inputs["context_lengths"]
    b = int(np.argmax(ctx))
    o["out_idx"][b, int(ctx[b]) - 1, 1] += 7


def mut_threshold(o, f):  # decode > 512 blocks: drop the last selected block, take the first dropped one
    b = int(np.flatnonzero(f.inputs["context_lengths"] // 4 > 512)[0])
    row = o["out_idx"][b, 0]
    n_vis = int(f.inputs["context_lengths"][b]) // 4
    sel = set(int(x) // 4 for x in row[0:2048:4])
    out_blk = min(g for g in range(n_vis) if g not in sel)
    blocks = sorted((sel - {max(sel)}) | {out_blk})
    row[:2048] = (np.array(blocks)[:, None] * 4 + np.arange(4)).reshape(-1)


def mut_pool_untouched(o, f):
    changed = np.flatnonzero(f.inputs["pool"].reshape(-1) == o["pool"].reshape(-1))
    o["pool"].reshape(-1)[changed[len(changed) // 2]] ^= 1


def mut_pool_written(o, f):
    changed = np.flatnonzero(f.inputs["pool"].reshape(-1) != o["pool"].reshape(-1))
    o["pool"].reshape(-1)[changed[0]] ^= 1


def mut_pool_unwritten(o, f):  # a cell the run writes left as it was (on an expected pool: a hygiene failure)
    changed = np.flatnonzero(f.inputs["pool"].reshape(-1) != o["pool"].reshape(-1))
    o["pool"].reshape(-1)[changed[0]] = f.inputs["pool"].reshape(-1)[changed[0]]


def mut_split(o, f):
    o["split_counters"][-1, -1] = 5


def mut_q_normed(o, f):
    o["q_normed"].reshape(-1)[200] ^= 0x8000


def mut_logits(o, f):
    o["logits"].view(np.uint32).reshape(-1)[np.flatnonzero(o["logits"].reshape(-1) > 0)[0]] ^= 1


def mut_kbar(o, f):
    o["kbar"].reshape(-1)[-1] ^= 1


def mut_size(o, f):
    o["out_idx"] = o["out_idx"][:, :, :100].copy()


REPORT_CASES = [
    ("prefill_random_bf16", mut_order), ("prefill_ctx_0_1_3_4_5_half", mut_padding),
    ("prefill_random_pool_half", mut_layout), ("decode_over_512_blocks_half", mut_threshold),
    ("prefill_pool_holes_half", mut_pool_untouched), ("prefill_ctx_0_1_3_4_5_bf16_pool", mut_pool_written),
    ("decode_ctx_1_3_4_5_split_half", mut_split), ("prefill_nan_padding_half", mut_q_normed),
    ("decode_completes_block_half", mut_logits), ("prefill_ties_dup_blocks_half", mut_kbar),
    ("prefill_random_bf16", mut_size), ("prefill_ties_relu_zero_bf16", mut_order),
]

# The one line whose wording differs: the C++ tool recomputes the logits with the CPU reference, the
# Python one with its NumPy implementation (the logits themselves are compared).
_THRESHOLD_HEAD = re.compile(r"logits around the selection threshold \((reference|NumPy implementation);")


def norm(s):
    return _THRESHOLD_HEAD.sub("logits around the selection threshold (X;", s)


def with_env(monkeypatch, spec):
    """Sets the spec's variables ("QSA_LEVELS=core QSA_PROFILE=none", or "") and clears the other QSA_
    ones for this process; returns the environment for the C++ tool."""
    for k in ("QSA_LEVELS", "QSA_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    for kv in spec.split():
        monkeypatch.setenv(*kv.split("=", 1))
    return dict(os.environ)


def diff_both(fx, od, env):
    """(rc, stdout) of `qsa diff FIXTURE OUTDIR` and of `python -m qsa_fixture diff FIXTURE OUTDIR`."""
    cpp = subprocess.run([qsa_bin(), "diff", fx, od], capture_output=True, text=True, timeout=120, env=env)
    rc, py = run_py_cli("diff", fx, od)
    return (cpp.returncode, cpp.stdout), (rc, py)


# The fixtures whose inputs are hardened (fixtureInputLevel: invalid decode rows, decode reads of -1 holes,
# page ids outside their plane), as `qsa replay` with QSA_LEVELS=core lists them NOT_JUDGED.
HARDENED_INPUTS = ("decode_over_512_blocks_half", "prefill_pool_holes_half", "decode_ctx_1_3_4_5_split_half",
                   "decode_invalid_rows_bf16")


def mut_invalid_row(o, f):  # decode_invalid_rows_bf16: row b=0 (ctx 13 > 4 * maxBlocks) must stay all -1
    o["out_idx"][0, 0, 5] = 3


# The REPORT_CASES under the default selection, then selections (QSA_LEVELS / QSA_PROFILE) x failures:
# judged, judged with a NOT JUDGED failed check, and not judged at all (the C++ tool then says IDENTICAL:
# nothing selected failed).
LEVEL_CASES = [("", name, mutate) for name, mutate in REPORT_CASES] + [
    ("", "decode_invalid_rows_bf16", mut_invalid_row),  # hardened inputs: two hardened checks fail
    ("QSA_LEVELS=core", "decode_invalid_rows_bf16", mut_invalid_row),  # hardened check, core only: NOT JUDGED
    ("QSA_LEVELS=hardened", "decode_invalid_rows_bf16", mut_invalid_row),
    ("QSA_LEVELS=core", "prefill_pool_holes_half", mut_pool_untouched),  # raised to hardened: NOT JUDGED
    ("QSA_LEVELS=hardened", "prefill_pool_holes_half", mut_pool_untouched),
    ("QSA_LEVELS=hardened", "prefill_random_pool_half", mut_layout),  # core inputs, hardened only
    ("QSA_PROFILE=none", "prefill_random_pool_half", mut_layout),  # Layout judged, Differential not
    ("QSA_PROFILE=none", "prefill_nan_padding_half", mut_q_normed),  # only an ieee check fails
    ("QSA_LEVELS=core,hardened QSA_PROFILE=ieee", "decode_over_512_blocks_half", mut_threshold),
]


@pytest.mark.parametrize("spec,name,mutate", LEVEL_CASES,
                         ids=[f"{s or 'default'}-{n}-{m.__name__}" for s, n, m in LEVEL_CASES])
def test_report_under_selection_equals_cpp(tmp_path, monkeypatch, spec, name, mutate):
    """The whole report, level lines included ("inputs: level ...", one "failed check ... [level=...
    profile=... contract=N]" per failed check), on fixtures with core and with hardened inputs."""
    env = with_env(monkeypatch, spec)
    fx, od = os.path.join(cases_dir(), name), str(tmp_path / "out")
    f = read_fixture(fx)
    outs = expected_as_outputs(f)
    mutate(outs, f)
    cli.write_outputs(od, outs)
    (crc, cpp), (rc, py) = diff_both(fx, od, env)
    assert crc == rc and norm(py) == norm(cpp), f"\n--- C++ rc={crc}\n{cpp}\n--- Python rc={rc}\n{py}"
    if not spec:
        assert rc == 1 and py.startswith("DIFFERENT") and "contract broken: " in py, py
        assert "\n  failed check Fixture." in py, py
        assert ("\n  inputs: level hardened (" in py) == (name in HARDENED_INPUTS), py
    if spec == "QSA_LEVELS=core" or spec == "QSA_LEVELS=hardened" and name == "prefill_random_pool_half":
        assert rc == 0 and py.startswith("IDENTICAL"), py  # nothing selected failed
    if spec == "QSA_PROFILE=none" and name == "prefill_random_pool_half":
        assert "failed check Fixture.Differential [level=core profile=ieee contract=1] NOT JUDGED (levels=" \
            "core,hardened profile=none)" in py, py


def test_report_when_only_a_row_check_fails(tmp_path, monkeypatch):
    """Expected and actual out_idx equal but breaking K4 (an altered fixture): no difference is noted,
    the summary is the failed check's detail and the contract the declared one."""
    env = with_env(monkeypatch, "")
    fx = altered_fixture(tmp_path, "prefill_random_bf16", mut_layout)
    outs = expected_as_outputs(read_fixture(fx))
    od = str(tmp_path / "out")
    cli.write_outputs(od, outs)
    (crc, cpp), (rc, py) = diff_both(fx, od, env)
    assert crc == rc == 1 and py == cpp, f"\n--- C++\n{cpp}\n--- Python\n{py}"
    r = replay(read_fixture(fx), lambda _: outs)
    assert r.summary.startswith("FAIL: row (b=") and r.summary.endswith(
        "[differential] level=core profile=none contract=2 (Fixture.Layout)"), r.summary


def altered_fixture(tmp_path, name, mutate):
    """A copy of a curated fixture whose expected outputs are altered: the reference (C++) and the NumPy
    implementation (Python) then both fail it with the same report."""
    fx = str(tmp_path / ("altered_" + name))
    shutil.copytree(os.path.join(cases_dir(), name), fx)
    f = read_fixture(fx)
    outs = expected_as_outputs(f)
    mutate(outs, f)
    cli.write_outputs(fx, {"expected_" + k: v for k, v in outs.items()})
    return fx


def replay_both(dirs, env, *flags):
    cpp = subprocess.run([qsa_bin(), "replay", *flags] + dirs, capture_output=True, text=True, timeout=300, env=env)
    rc, py = run_py_cli("replay", *flags, *dirs)
    return cpp, rc, py


@pytest.mark.parametrize("spec", ["", "QSA_LEVELS=core", "QSA_LEVELS=hardened", "QSA_PROFILE=none"])
def test_replay_output_equals_cpp(tmp_path, monkeypatch, spec):
    """`qsa replay` and `python -m qsa_fixture replay` print the same output (PASS / FAIL with summary,
    QSA_CHECK_FAILED / QSA_NOT_JUDGED lines, NOT_JUDGED fixtures, reports, the closing count with the
    not-judged tally) on passing core and hardened fixtures and on altered ones that fail."""
    env = with_env(monkeypatch, spec)
    dirs = [os.path.join(cases_dir(), n) for n in ("prefill_random_bf16", "hand_decode_tails",
                                                    "decode_invalid_rows_bf16", "prefill_pool_holes_half")]
    dirs += [altered_fixture(tmp_path, "prefill_random_bf16", mut_order),
             altered_fixture(tmp_path, "decode_over_512_blocks_half", mut_threshold),
             altered_fixture(tmp_path, "prefill_ctx_0_1_3_4_5_bf16_pool", mut_pool_written),
             altered_fixture(tmp_path, "prefill_random_pool_half", mut_pool_unwritten)]  # fails under profile none
    cpp, rc, py = replay_both(dirs, env)
    assert cpp.returncode == rc == 1, (cpp.returncode, rc, cpp.stderr)
    cl, pl = norm(cpp.stdout).splitlines(), norm(py).splitlines()
    assert cl[:-1] == pl[:-1], f"\n--- C++\n{cpp.stdout}\n--- Python\n{py}"
    assert cl[-1].replace("impl=reference", "impl=qsa_fixture.numpy_impl:run") == pl[-1], (cl[-1], pl[-1])
    assert "  QSA_CHECK_FAILED Fixture." in py and "\n  failed check Fixture." in py
    if spec:
        assert "  QSA_NOT_JUDGED Fixture." in py and "checks not judged (" in pl[-1], py


def test_replay_lines_equal_cpp(tmp_path, monkeypatch):
    """`qsa replay --quiet` and `python -m qsa_fixture replay --quiet` print the same line per fixture
    (PASS / INVALID with the same message), on curated fixtures and invalid ones."""
    env = with_env(monkeypatch, "")
    bad = str(tmp_path / "bad")
    shutil.copytree(os.path.join(cases_dir(), "hand_decode_tails"), bad)
    os.remove(os.path.join(bad, "w_k.npy"))
    dirs = [os.path.join(cases_dir(), n) for n in ("prefill_random_bf16", "hand_decode_tails",
                                                    "decode_over_512_blocks_half")] + [bad, str(tmp_path / "none")]
    cpp, rc, py = replay_both(dirs, env, "--quiet")
    assert cpp.returncode == rc == 1
    cl, pl = cpp.stdout.splitlines(), py.splitlines()
    assert cl[:-1] == pl[:-1], f"\n--- C++\n{cpp.stdout}\n--- Python\n{py}"
    assert cl[-1] == "3 of 5 fixtures pass (impl=reference)"
    assert pl[-1] == "3 of 5 fixtures pass (impl=qsa_fixture.numpy_impl:run)"


@pytest.mark.parametrize("spec", ["QSA_LEVELS=bogus", "QSA_LEVELS=,core", "QSA_LEVELS=core,all", "QSA_PROFILE=slow",
                                  "QSA_LEVELS=x QSA_PROFILE=y"])
def test_bad_selection_message_equals_cpp(monkeypatch, capsys, spec):
    """A bad QSA_LEVELS / QSA_PROFILE: exit 1 and the C++ message (after the tool's name), from replay and
    from diff, before any fixture is read."""
    env = with_env(monkeypatch, spec)
    fx = os.path.join(cases_dir(), "prefill_random_bf16")
    for args in (["replay", fx], ["diff", fx, fx]):
        cpp = subprocess.run([qsa_bin()] + args, capture_output=True, text=True, timeout=60, env=env)
        rc = cli.main(args)
        err = capsys.readouterr().err
        assert cpp.returncode == rc == 1 and cpp.stdout == ""
        assert cpp.stderr.startswith("qsa: QSA_") and err == "qsa_fixture: " + cpp.stderr[len("qsa: "):], \
            (cpp.stderr, err)


def test_replay_reports_a_tie_break_bug(tmp_path, monkeypatch):
    """The planted tie-break bug's outputs give the same report in both tools, with its contract and
    check; replay() of the buggy callable says the same."""
    env = with_env(monkeypatch, "")
    fx = os.path.join(cases_dir(), "prefill_ties_relu_zero_bf16")
    f = read_fixture(fx)
    r = replay(f, tie_bug)
    assert not r.passed
    assert r.summary.startswith("FAIL: out_idx row (b=") and r.summary.endswith(
        "[differential] level=core profile=ieee contract=1 (Fixture.Differential)"), r.summary
    assert "equal logits, the contract orders them by ascending block id" in r.report, r.report
    od = str(tmp_path / "out")
    cli.write_outputs(od, tie_bug(f))
    (crc, cpp), (rc, py) = diff_both(fx, od, env)
    assert crc == rc == 1 and norm(py) == norm(cpp), f"\n--- C++\n{cpp}\n--- Python\n{py}"
    assert py == f"DIFFERENT {fx} vs {od}\n" + r.report


def probe_format(r, name):
    """tests/replay_throw_probe.cc's output for a ReplayResult."""
    return (f"pass={int(r.passed)} anyJudged={int(r.any_judged)} inputLevel={r.input_level} contract={r.contract}\n"
            f"summary: {r.summary}\n" + "".join(f"  {line}\n" for line in r.lines(name)) + r.report)


def probe_bin():
    """//python:replay_throw_probe."""
    return built_binary("QSA_THROW_PROBE", "python", "replay_throw_probe", "no replay_throw_probe: run under "
                        "`bazel test //python:replay_test`, or `bazel build //python:replay_throw_probe` first, or "
                        "set QSA_THROW_PROBE")


THROW_CASES = [("", "prefill_random_bf16"), ("", "decode_over_512_blocks_half"),
               ("QSA_LEVELS=core", "decode_over_512_blocks_half"),  # raised to hardened: NOT JUDGED
               ("QSA_LEVELS=hardened", "prefill_random_bf16"), ("QSA_LEVELS=hardened", "prefill_pool_holes_half"),
               ("QSA_PROFILE=none", "hand_prefill_ctx_0_1_2_3")]


@pytest.mark.parametrize("spec,name", THROW_CASES, ids=[f"{s or 'default'}-{n}" for s, n in THROW_CASES])
def test_impl_exception_equals_cpp(monkeypatch, spec, name):
    """An implementation that throws is a failure of Fixture.Api (contract api) at the fixture's input
    level, or NOT JUDGED when that level is not selected: the same result, lines and report as
    fixtures/replay.cc's replay() (through tests/replay_throw_probe.cc)."""
    env = with_env(monkeypatch, spec)
    fx = os.path.join(cases_dir(), name)
    message = "runQsaIndexerPrefill: batchSize 0"

    def boom(f):
        raise RuntimeError(message)
    cpp = subprocess.run([probe_bin(), fx, message], capture_output=True, text=True, timeout=60, env=env)
    assert cpp.returncode == 0, cpp.stderr
    r = replay(read_fixture(fx), boom)
    assert probe_format(r, fx) == cpp.stdout, f"\n--- C++\n{cpp.stdout}\n--- Python\n{probe_format(r, fx)}"
    assert r.contract == "api" and r.report.startswith("contract broken: api [level=")
    if spec == "QSA_LEVELS=core":
        assert r.passed and not r.any_judged and r.summary == "NOT JUDGED"
    elif spec == "":
        assert not r.passed and r.summary.startswith(f"FAIL: the implementation threw: {message} level=")


def test_cli_replay_impl_spec_and_show(tmp_path):
    fx = os.path.join(cases_dir(), "hand_prefill_ctx_0_1_2_3")
    rc, out = run_py_cli("replay", "--impl", "qsa_fixture.numpy_impl:run", fx)
    assert rc == 0 and out.splitlines() == [f"PASS {fx}", "1 of 1 fixtures pass (impl=qsa_fixture.numpy_impl:run)"]
    cpp = subprocess.run([qsa_bin(), "show", fx], capture_output=True, text=True, timeout=60)
    rc, out = run_py_cli("show", fx)
    assert rc == 0 and out == cpp.stdout
    od = str(tmp_path / "o")
    rc, _ = run_py_cli("run", fx, "--out", od)
    cpp = subprocess.run([qsa_bin(), "diff", fx, od], capture_output=True, text=True, timeout=60)
    assert rc == 0 and cpp.returncode == 0 and cpp.stdout.startswith("IDENTICAL"), cpp.stdout
    assert run_py_cli("replay", "--impl", "nonsense", fx)[0] == 1

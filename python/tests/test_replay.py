"""Replay: the NumPy implementation passes every curated fixture bit for bit; the Python replay's
lines and reports equal the C++ tool's (`qsa replay`, `qsa diff FIXTURE OUTDIR`) on mismatching outputs;
a tie-break bug is reported with its contract."""
import contextlib
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from common import cases_dir, curated_cases, qsa_bin
from qsa_fixture import __main__ as cli
from qsa_fixture import numpy_impl, read_fixture, replay
from qsa_fixture.npy import serialize_npy


@pytest.mark.parametrize("path", curated_cases(), ids=os.path.basename)
def test_numpy_impl_passes_curated_fixture(path):
    r = replay(read_fixture(path), numpy_impl.run)
    assert r.passed, r.summary + "\n" + r.report


def run_py_cli(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(list(args))
    return rc, out.getvalue()


def write_outputs(d, outputs):
    os.makedirs(d, exist_ok=True)
    for k, v in outputs.items():
        with open(os.path.join(d, k + ".npy"), "wb") as fh:
            fh.write(serialize_npy(v))


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
# Not yet in the Python report: the level/profile lines of the C++ one (checks/registry.tsv, contract
# section 8: "inputs: level ..." and one "failed check ... [level=... profile=...]" per failed check).
# Compared without them until the Python reader reads the registry too.
_LEVEL_LINES = re.compile(r"^  (inputs: level |failed check ).*\n", re.M)


@pytest.mark.parametrize("name,mutate", REPORT_CASES, ids=[f"{n}-{m.__name__}" for n, m in REPORT_CASES])
def test_report_equals_cpp(tmp_path, name, mutate):
    fx = os.path.join(cases_dir(), name)
    f = read_fixture(fx)
    outs = expected_as_outputs(f)
    mutate(outs, f)
    od = str(tmp_path / "out")
    write_outputs(od, outs)
    cpp = subprocess.run([qsa_bin(), "diff", fx, od], capture_output=True, text=True, timeout=120)
    rc, py = run_py_cli("diff", fx, od)
    assert cpp.returncode == rc == 1, (cpp.returncode, rc, cpp.stderr)
    norm = lambda s: _LEVEL_LINES.sub("", _THRESHOLD_HEAD.sub("logits around the selection threshold (X;", s))  # noqa: E731
    assert norm(py) == norm(cpp.stdout), f"\n--- C++\n{cpp.stdout}\n--- Python\n{py}"
    assert py.startswith("DIFFERENT") and "contract broken: " in py


def test_replay_lines_equal_cpp(tmp_path):
    """`qsa replay --quiet` and `python -m qsa_fixture replay --quiet` print the same line per fixture
    (PASS / INVALID with the same message), on curated fixtures and invalid ones."""
    bad = str(tmp_path / "bad")
    import shutil
    shutil.copytree(os.path.join(cases_dir(), "hand_decode_tails"), bad)
    os.remove(os.path.join(bad, "w_k.npy"))
    dirs = [os.path.join(cases_dir(), n) for n in ("prefill_random_bf16", "hand_decode_tails",
                                                    "decode_over_512_blocks_half")] + [bad, str(tmp_path / "none")]
    cpp = subprocess.run([qsa_bin(), "replay", "--quiet"] + dirs, capture_output=True, text=True, timeout=300)
    rc, py = run_py_cli("replay", "--quiet", *dirs)
    assert cpp.returncode == rc == 1
    cl, pl = cpp.stdout.splitlines(), py.splitlines()
    assert cl[:-1] == pl[:-1], f"\n--- C++\n{cpp.stdout}\n--- Python\n{py}"
    assert cl[-1] == "3 of 5 fixtures pass (impl=reference)"
    assert pl[-1] == "3 of 5 fixtures pass (impl=qsa_fixture.numpy_impl:run)"


def ties_by_descending_id(f):
    """A deliberately wrong implementation: equal logits ordered by DESCENDING block id."""
    orig = numpy_impl.select

    def bad_select(logits, n_vis):
        order = np.argsort(-logits[:n_vis][::-1], kind="stable")
        return (n_vis - 1 - order)[:min(512, n_vis)]
    numpy_impl.select = bad_select
    try:
        return numpy_impl.run(f)
    finally:
        numpy_impl.select = orig


def test_replay_reports_a_tie_break_bug():
    f = read_fixture(os.path.join(cases_dir(), "prefill_ties_relu_zero_bf16"))
    r = replay(f, ties_by_descending_id)
    assert not r.passed
    assert r.summary.startswith("FAIL: out_idx row (b=") and r.summary.endswith("[differential]"), r.summary
    assert "equal logits, the contract orders them by ascending block id" in r.report, r.report


def test_impl_exception_is_api_failure():
    def boom(f):
        raise RuntimeError("runQsaIndexerPrefill: batchSize 0")
    r = replay(read_fixture(curated_cases()[0]), boom)
    assert not r.passed and r.contract == "api"
    assert r.summary == "FAIL: the implementation threw: runQsaIndexerPrefill: batchSize 0"


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

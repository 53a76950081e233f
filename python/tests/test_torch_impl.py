"""qsa_fixture.torch_impl. With PyTorch installed: on every curated fixture it passes the checks of profile
none (K4 layout, padded / invalid rows, pool hygiene, the call), on CUDA when there is a GPU; how many
fixtures it passes bit for bit (profile ieee) is printed, not asserted (it is a profile fast
implementation). Without PyTorch (CI here) those tests SKIP, saying so, and the module's code path runs on
tests/fake_torch, a NumPy stand-in for the torch calls it makes: every curated fixture's out_idx, pool,
split_counters and kbar come out bit for bit as expected there (its NumPy float32 numerics happen to
select the same blocks), which checks the indexing, pool writes, selection and K4 of the module, not
torch's arithmetic."""
import importlib.util
import os

import pytest

from common import HERE, cases_dir, curated_cases, run_python

HAVE_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = ("PyTorch is NOT installed: qsa_fixture.torch_impl is NOT tested on torch here (install torch, then "
            "`bazel test //python:torch_impl_test` or, from python/, `python3 -m pytest tests/test_torch_impl.py`)")


def test_compiles_and_loads_without_importing_torch():
    p = run_python(["-c", "import sys, qsa_fixture.torch_impl; print('torch' in sys.modules)"])
    assert p.returncode == 0 and p.stdout == "False\n", p.stdout + p.stderr


SHIM_CHECK = """
import sys, numpy as np
from qsa_fixture import read_fixture, torch_impl
from qsa_fixture.outputs import normalize_outputs
for d in sys.argv[1:]:
    f = read_fixture(d)
    o = normalize_outputs(f, torch_impl.run(f))
    bad = [k for k in ("out_idx", "pool", "split_counters", "kbar") if k in f.expected and
           not np.array_equal(o[k].view(np.uint8), np.asarray(f.expected[k]).view(np.uint8))]
    print(d, "differs:", ",".join(bad) or "-")
"""


def test_code_path_on_the_numpy_shim():
    shim = os.path.join(HERE, "fake_torch")
    cases = curated_cases()
    p = run_python(["-c", SHIM_CHECK, *cases], shim)
    assert p.returncode == 0 and p.stdout.splitlines() == [f"{d} differs: -" for d in cases], p.stdout + p.stderr
    # The lead's command (python/README.md) on the same shim: profile none judged, every fixture passes.
    p = run_python(["-m", "qsa_fixture", "replay", "--quiet", "--impl", "qsa_fixture.torch_impl:run", *cases], shim,
                   env_extra={"QSA_PROFILE": "none"})
    assert p.returncode == 0 and p.stdout.splitlines()[-1].startswith(
        f"{len(cases)} of {len(cases)} fixtures pass (impl=qsa_fixture.torch_impl:run)"), p.stdout + p.stderr


@pytest.mark.skipif(HAVE_TORCH, reason="PyTorch is installed (this checks the message without it)")
def test_without_torch_the_call_fails_in_one_line():
    fx = os.path.join(cases_dir(), "hand_prefill_ctx_0_1_2_3")
    p = run_python(["-m", "qsa_fixture", "replay", "--quiet", "--impl", "qsa_fixture.torch_impl:run", fx])
    assert p.returncode == 1 and p.stdout.splitlines()[0].startswith(
        f"FAIL {fx}: FAIL: the implementation threw: qsa_fixture.torch_impl needs PyTorch, which is not "
        "installed"), p.stdout + p.stderr


@pytest.mark.skipif(not HAVE_TORCH, reason=NO_TORCH)
def test_real_torch_on_every_curated_fixture(capsys):
    from qsa_fixture import levels, read_fixture, replay, torch_impl
    none, ieee = levels.parse_selection("", "none"), levels.parse_selection("", "ieee")
    bad, exact = [], 0
    for d in curated_cases():
        f = read_fixture(d)
        r = replay(f, torch_impl.run, none)
        if not r.passed:
            bad.append(f"{d}: {r.summary}")
        exact += replay(f, torch_impl.run, ieee).passed
    with capsys.disabled():
        print(f"\ntorch_impl: {len(curated_cases()) - len(bad)} of {len(curated_cases())} curated fixtures pass "
              f"profile none; {exact} pass profile ieee (bit for bit)")
    assert not bad, "\n".join(bad)

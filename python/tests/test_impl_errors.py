"""What a Python user's implementation gets wrong (wrong dtype, shape or kind of output, a tensor on a
device, an exception, a hang) is ONE line naming the fixture and the problem, judged as check Fixture.Api;
never a traceback from inside the package (outputs.py, replay.py, `replay --timeout`)."""
import importlib.util
import os
import sys

import pytest

from bad_impls import CASES
from common import HERE, cases_dir, run_python
from qsa_fixture import numpy_impl, read_fixture, replay

POOL_FX = "prefill_random_pool_half"  # core inputs, with a pool
API = "level=core profile=none contract=0 (Fixture.Api)"


@pytest.mark.parametrize("name,detail", CASES, ids=[c[0] for c in CASES])
def test_cli_one_line_per_problem(name, detail):
    fx = os.path.join(cases_dir(), POOL_FX)
    f = read_fixture(fx)
    assert (f.batch_size, f.seq_len, f.dtype) == (1, 10, "half")  # the shapes named in CASES
    p = run_python(["-m", "qsa_fixture", "replay", "--timeout", "1", "--impl", f"bad_impls:{name}", fx], HERE,
                   timeout=120)
    assert p.returncode == 1 and p.stderr == "", p.stderr
    assert p.stdout.splitlines() == [
        f"FAIL {fx}: FAIL: {detail} {API}",
        f"  QSA_CHECK_FAILED Fixture.Api level=core profile=none contract=0 fixture={fx}: {detail}",
        "contract broken: api [level=core profile=none contract=0]",
        f"  {detail.replace('the implementation threw: ', '')}",
        f"0 of 1 fixtures pass (impl=bad_impls:{name})"], p.stdout


def test_run_command_one_line(tmp_path):
    fx = os.path.join(cases_dir(), POOL_FX)
    p = run_python(["-m", "qsa_fixture", "run", "--impl", "bad_impls:pool_as_float32", fx, "--out",
                    str(tmp_path / "o")], HERE, timeout=120)
    assert p.returncode == 1 and p.stdout == "" and p.stderr == f"qsa_fixture: {fx}: {CASES[0][1]}\n", p.stderr


# The torch shim (tests/fake_torch): outputs.py looks up torch.int16 in sys.modules["torch"].
_spec = importlib.util.spec_from_file_location("torch", os.path.join(HERE, "fake_torch", "torch", "__init__.py"))
torch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(torch)


class CudaTensor(torch.Tensor):
    """A tensor on cuda:0: .numpy() refuses (outputs.py must copy it to the host first), .cpu() copies."""
    __module__ = "torch"
    cpu_fails = False

    def __init__(self, a, dt=None):
        super().__init__(a, dt)
        self.device = torch.device("cuda:0")

    def cpu(self):
        if self.cpu_fails:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return torch.Tensor(self.a, self.dtype)

    def numpy(self):
        raise TypeError(f"can't convert {self.device} device type tensor to numpy")


def as_tensors(f, out, t=None):
    """out as tensors on cuda:0; pool, q_normed, kbar as values of T (or of t)."""
    t = t or {"half": torch.float16, "bf16": torch.bfloat16}[f.dtype]
    return {k: CudaTensor(torch.from_numpy(v).view(t).a, t) if k in ("pool", "q_normed", "kbar") else CudaTensor(v)
            for k, v in out.items()}


@pytest.mark.parametrize("name", [POOL_FX, "decode_ctx_1_3_4_5_split_half", "prefill_ctx_0_1_3_4_5_bf16_pool"])
def test_torch_tensors_on_a_device_are_converted(monkeypatch, name):
    monkeypatch.setitem(sys.modules, "torch", torch)
    f = read_fixture(os.path.join(cases_dir(), name))
    r = replay(f, lambda fx: as_tensors(fx, numpy_impl.run(fx)))
    assert r.passed and r.any_judged, r.summary


def test_torch_tensor_problems_are_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", torch)
    f = read_fixture(os.path.join(cases_dir(), POOL_FX))
    r = replay(f, lambda fx: as_tensors(fx, numpy_impl.run(fx), torch.bfloat16))
    assert r.summary == ("FAIL: output pool: dtype torch.bfloat16 in a half fixture, expected uint16 bit patterns "
                         f"of half (or float16 values) {API}"), r.summary

    def broken_device(fx):
        out = as_tensors(fx, numpy_impl.run(fx))
        out["out_idx"].cpu_fails = True
        return out
    r = replay(f, broken_device)
    assert r.summary == ("FAIL: output out_idx: cannot copy the cuda:0 tensor to the host: CUDA error: an illegal "
                         f"memory access was encountered {API}"), r.summary

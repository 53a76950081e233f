"""The Python writer: both readers accept every curated fixture and, with identical contents, its copy by
the Python writer; for C++-written fixtures (all but hand_*) every file is byte for byte the C++ writer's."""
import os
import subprocess

import numpy as np
import pytest

from common import curated_cases, files, qsa_bin
from qsa_fixture import FixtureError, read_fixture, write_fixture


@pytest.mark.parametrize("path", curated_cases(), ids=os.path.basename)
def test_round_trip(tmp_path, path):
    f = read_fixture(path)
    out = str(tmp_path / "copy")
    write_fixture(out, f)
    cpp = subprocess.run([qsa_bin(), "diff", path, out], capture_output=True, text=True, timeout=120)
    assert cpp.returncode == 0 and cpp.stdout.startswith("IDENTICAL"), cpp.stdout + cpp.stderr
    g = read_fixture(out)
    for k in set(f.inputs) | set(g.inputs):
        assert np.array_equal(f.inputs[k].view(np.uint8), g.inputs[k].view(np.uint8)), k
    assert f.description == g.description and f.seed == g.seed and f.rms_eps_bits == g.rms_eps_bits
    if f.provenance is not None and "hand" not in os.path.basename(path):  # C++-written: only format files
        assert files(out) == files(path), "the Python writer's files differ from the C++ writer's"


def test_writer_validates_first_and_removes_stale_files(tmp_path):
    cases = {os.path.basename(p): p for p in curated_cases()}
    pool_case = read_fixture(cases["prefill_ctx_0_1_3_4_5_bf16_pool"])
    no_pool = read_fixture(cases["prefill_ctx_0_1_3_4_5_half"])
    d = str(tmp_path / "f")
    write_fixture(d, pool_case)
    assert os.path.exists(os.path.join(d, "pool.npy"))
    write_fixture(d, no_pool)  # the earlier fixture's pool files must go, or the directory is invalid
    assert not os.path.exists(os.path.join(d, "pool.npy"))
    read_fixture(d)
    bad = no_pool
    bad.inputs["context_lengths"] = np.array([0, 1, 3, 4, 99], np.int32)
    e = str(tmp_path / "never")
    with pytest.raises(FixtureError) as err:
        write_fixture(e, bad)
    assert err.value.field == "context_lengths[4]" and not os.path.exists(e)

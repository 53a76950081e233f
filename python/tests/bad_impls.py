"""Implementations that go wrong the ways a Python user's do (impl_errors_test, pytest_plugin_test): each
must give ONE line naming the fixture and the problem. `--impl bad_impls:<name>` with tests/ on the path."""
import time

import numpy as np

from qsa_fixture import numpy_impl


def good(f):
    return numpy_impl.run(f)


def pool_as_float32(f):  # T values instead of their bits
    out = numpy_impl.run(f)
    out["pool"] = out["pool"].view(np.float16).astype(np.float32)
    return out


def out_idx_as_float(f):
    out = numpy_impl.run(f)
    out["out_idx"] = out["out_idx"].astype(np.float64)
    return out


def logits_as_float64(f):
    out = numpy_impl.run(f)
    out["logits"] = out["logits"].astype(np.float64)
    return out


def out_idx_short(f):
    out = numpy_impl.run(f)
    out["out_idx"] = out["out_idx"][..., :2048]
    return out


def raises(f):
    return {}["out_idx"]  # a KeyError: its message alone is just "'out_idx'"


def hangs(f):
    time.sleep(3600)


def returns_none(f):
    return None


def typo_key(f):
    out = numpy_impl.run(f)
    out["qnormed"] = out.pop("q_normed")
    return out


def no_pool(f):
    out = numpy_impl.run(f)
    out.pop("pool", None)
    return out


def tie_bug(f):
    """Selection ties by DESCENDING id (the contract: ascending): a differential failure."""
    out = numpy_impl.run(f)
    lg, S = out["logits"], f.seq_len
    for row in range(f.batch_size * S):
        b, t = divmod(row, S)
        n_vis = (t + 1) // 4
        if t >= int(f.inputs["context_lengths"][b]) or n_vis == 0:
            continue
        ids = np.arange(n_vis)[::-1]
        sel = ids[np.argsort(-lg[row, :n_vis][::-1], kind="stable")][:512]
        out["out_idx"][b, t] = numpy_impl.expand(sel, n_vis, (t + 1) % 4)
    return out

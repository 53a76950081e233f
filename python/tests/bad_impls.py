"""Implementations that go wrong the ways a Python user's do (impl_errors_test, pytest_plugin_test, replay_test): each
must give ONE line naming the fixture and the problem. `--impl bad_impls:<name>` with tests/ on the path."""
import time

import numpy as np

from qsa_fixture import numpy_impl

NAMES = "out_idx, pool, split_counters, q_normed, kbar, logits"
# (name, the problem's one line) on prefill_random_pool_half (half, B = 1, S = 10, a pool) with a 1 s timeout.
CASES = [
    ("pool_as_float32", "output pool: dtype float32, expected uint16 bit patterns of half (or float16 values)"),
    ("out_idx_as_float", "output out_idx: dtype float64, expected int32 (any integer dtype whose values fit)"),
    ("logits_as_float64", "output logits: dtype float64, expected float32"),
    ("out_idx_short", "output out_idx: shape [1, 10, 2048], expected [1, 10, 2051]"),
    ("raises", "the implementation threw: KeyError: 'out_idx'"),
    ("hangs", "the implementation did not return within 1 s (timeout)"),
    ("returns_none", f"the implementation returned a NoneType, expected a dict of outputs ({NAMES})"),
    ("typo_key", f"unknown output 'qnormed' (outputs: {NAMES})"),
    ("no_pool", "no output pool (required for this fixture; got kbar, logits, out_idx, q_normed)"),
]


def _changed(change):
    """numpy_impl's outputs, then change(out) on them."""
    def impl(f):
        out = numpy_impl.run(f)
        change(out)
        return out
    return impl


pool_as_float32 = _changed(lambda o: o.update(pool=o["pool"].view(np.float16).astype(np.float32)))  # T values, not bits
out_idx_as_float = _changed(lambda o: o.update(out_idx=o["out_idx"].astype(np.float64)))
logits_as_float64 = _changed(lambda o: o.update(logits=o["logits"].astype(np.float64)))
out_idx_short = _changed(lambda o: o.update(out_idx=o["out_idx"][..., :2048]))
typo_key = _changed(lambda o: o.update(qnormed=o.pop("q_normed")))
no_pool = _changed(lambda o: o.pop("pool", None))


def raises(f):
    return {}["out_idx"]  # a KeyError: its message alone is just "'out_idx'"


def hangs(f):
    time.sleep(3600)


def returns_none(f):
    return None


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

"""Random differential: the NumPy implementation against the C++ reference (`qsa run --impl=reference`)
on random prefill and decode cases written by the Python writer: out_idx, pool, split counters and every
stage output bit for bit (decode logits: each valid row's prefix ctx/4). QSA_DIFF_CASES=N runs more;
QSA_DIFF_BIG=1 adds a prefill with S = 2100 (nVis > 512 in prefill order)."""
import os
import subprocess

import numpy as np
import pytest

from common import qsa_bin
from qsa_fixture import compare_outputs, levels, numpy_impl, read_fixture, write_fixture
from qsa_fixture.__main__ import load_output_arrays
from qsa_fixture.fixture import Fixture

N = int(os.environ.get("QSA_DIFF_CASES", "16"))
EPS = [0x358637BD, 0x3727C5AC, 0x00000000, 0x80000000, 0xBA83126F, 0x00000001, 0x7F800000]


def t_bits(rng, shape, dtype, scale=1.0, nan_frac=0.0):
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    if dtype == "half":
        b = x.astype(np.float16).view(np.uint16)
    else:
        b = (x.view(np.uint32) >> 16).astype(np.uint16)
    if nan_frac:
        b = np.where(rng.random(shape) < nan_frac, np.uint16(0x7E01), b)
    return b.astype(np.uint16)


def cos_sin(rng, rows, identity=False):
    if identity:
        return np.concatenate([np.ones((rows, 32)), np.zeros((rows, 32))], 1).astype(np.float32)
    ang = np.arange(rows)[:, None] * (10000.0 ** (-np.arange(32) / 32.0))[None, :]
    return np.concatenate([np.cos(ang), np.sin(ang)], 1).astype(np.float32)


def pool_and_table(rng, B, pages_needed, dtype):
    heads = int(rng.integers(1, 3))
    head_size = int(rng.integers(1, 8))
    phd = head_size + 128 + int(rng.integers(0, 3))
    mpps = pages_needed + int(rng.integers(0, 2))
    num_pages = B * mpps + int(rng.integers(0, 3))
    ids = rng.permutation(num_pages)
    k_ids = ids[:B * mpps].reshape(B, mpps)  # distinct K pages, each V page = its K page + num_pages
    pt = np.stack([k_ids, k_ids + num_pages], 1).astype(np.int32)
    holes = rng.random(pt.shape) < 0.15
    pt = np.where(holes, -1, pt)
    out_of_plane = rng.random(pt.shape) < 0.08  # K ids in the V plane and vice versa: never dereferenced
    pt = np.where(out_of_plane & (pt >= 0), (pt + num_pages) % (2 * num_pages), pt).astype(np.int32)
    pool = t_bits(rng, (2 * num_pages, 128, heads, phd), dtype, 0.5, nan_frac=0.02)
    dims = dict(num_pages=num_pages, max_pages_per_seq=mpps, num_kv_heads=heads, pool_head_dim=phd,
                head_size=head_size)
    return dims, pt, pool


def ties(rng, qk, S):
    """Duplicate raw-k blocks (equal kbar with an identity rope) and zero rows (relu-zero logits)."""
    if rng.random() < 0.5 and S >= 8:
        qk[:, 4:8, 512:] = qk[:, 0:4, 512:]
    if rng.random() < 0.3:
        qk[:, :, :512] = np.where(rng.random(qk[:, :, :512].shape) < 0.5, np.uint16(0), qk[:, :, :512])


def make_prefill(rng, S=None):
    dtype = "half" if rng.random() < 0.5 else "bf16"
    B = int(rng.integers(1, 4))
    S = S or int(rng.integers(1, 41))
    ctx = rng.integers(0, S + 1, B).astype(np.int32)
    qk = t_bits(rng, (B, S, 640), dtype, float(rng.choice([0.05, 1.0, 30.0])))
    for b in range(B):  # poison what the contract never reads: padded rows, NaN-safe
        qk[b, ctx[b]:] = 0x7E01
    ties(rng, qk, S)
    identity = rng.random() < 0.3
    f = Fixture(description="random prefill", pipeline="prefill", dtype=dtype, batch_size=B, seq_len=S,
                rms_eps_bits=int(rng.choice(EPS)), pool=None)
    f.inputs.update(index_qk=qk, cos_sin=cos_sin(rng, S + int(rng.integers(0, 3)), identity),
                    context_lengths=ctx, w_q=t_bits(rng, (128,), dtype, float(rng.choice([0.1, 3.0, 3e4]))),
                    w_k=t_bits(rng, (128,), dtype, 0.1))
    if rng.random() < 0.6:
        dims, pt, pool = pool_and_table(rng, B, (S + 127) // 128, dtype)
        f.pool = dims
        f.inputs.update(page_table=pt, pool=pool)
        f.expected["pool"] = pool.copy()
    f.expected["out_idx"] = np.zeros((B, S, 2051), np.int32)
    return f


def make_decode(rng):
    dtype = "half" if rng.random() < 0.5 else "bf16"
    B = int(rng.integers(1, 4))
    ctx = rng.integers(1, 300, B)
    ctx = np.where(rng.random(B) < 0.4, (ctx // 4) * 4 + 4, ctx).astype(np.int32)  # blocks completing
    hi = int(ctx.max())
    max_blocks = int(rng.integers(max(1, hi // 4 - 3), hi // 4 + 3))
    # maxBlocks around ctx/4: valid rows, invalid ones (ctx/4 > maxBlocks) and the floor edge
    # ctx/4 <= maxBlocks < ceilDiv(ctx, 4), which contract v2 makes valid.
    qk = t_bits(rng, (B, 1, 640), dtype, float(rng.choice([0.05, 1.0, 30.0])))
    dims, pt, pool = pool_and_table(rng, B, (hi + 127) // 128, dtype)
    split = bool(rng.random() < 0.5)
    f = Fixture(description="random decode", pipeline="decode", dtype=dtype, batch_size=B, seq_len=1,
                rms_eps_bits=int(rng.choice(EPS)), pool=dims, max_blocks=max_blocks, split_counters=split)
    f.inputs.update(index_qk=qk, cos_sin=cos_sin(rng, hi, rng.random() < 0.3), context_lengths=ctx,
                    w_q=t_bits(rng, (128,), dtype, 0.3), w_k=t_bits(rng, (128,), dtype, 0.3),
                    page_table=pt, pool=pool)
    f.expected.update(out_idx=np.zeros((B, 1, 2051), np.int32), pool=pool.copy())
    if split:
        sc = rng.integers(0, 9, (B, dims["num_kv_heads"])).astype(np.int32)
        f.inputs["split_counters"] = sc
        f.expected["split_counters"] = np.zeros_like(sc)
    return f


def compare_with_reference(tmp_path, f):
    d, od = str(tmp_path / "case"), str(tmp_path / "ref")
    write_fixture(d, f)
    p = subprocess.run([qsa_bin(), "run", "--impl=reference", d, "--out", od], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    f = read_fixture(d)
    ours = numpy_impl.run(f)
    f.expected, _ = load_output_arrays(od)  # the reference's outputs, each compared as replay compares them
    assert {k: ours[k].shape for k in f.expected} == {k: v.shape for k, v in f.expected.items()}
    r = compare_outputs(f, ours, levels.parse_selection("", "ieee"))  # every check, whatever QSA_LEVELS says
    assert r.passed and r.any_judged, r.summary + "\n" + r.report


@pytest.mark.parametrize("seed", range(N))
def test_random_case_equals_reference(tmp_path, seed):
    rng = np.random.default_rng(1000 + seed)
    compare_with_reference(tmp_path, make_prefill(rng) if seed % 2 == 0 else make_decode(rng))


@pytest.mark.skipif(os.environ.get("QSA_DIFF_BIG") != "1", reason="opt-in: minutes (QSA_DIFF_BIG=1)")
def test_big_prefill_equals_reference(tmp_path):
    rng = np.random.default_rng(7)
    compare_with_reference(tmp_path, make_prefill(rng, S=2100))

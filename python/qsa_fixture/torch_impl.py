"""A straightforward PyTorch implementation of the QSA indexer contract (/work/shared/CONTRACT.md),
prefill and one decode step, half and bf16, on CUDA when available (else CPU; $QSA_TORCH_DEVICE picks),
written as a model author would: float32 math with torch ops (mean of squares, torch.rsqrt, matmul for
the head dot products, a stable descending sort for the selection). It is NOT bit-exact with section 4
(other summation orders, rsqrt): it is a profile `fast` implementation (section 9), a test subject for the
suite, and follows what section 9 keeps exact: which values are combined, casts to T with NaN -> 0x7FFF,
the block mean rounded to T, relu to +0.0, -FLT_MAX for invisible logits, the tie rule, K4, the pool
cells and guards of sections 3 and 5.

Entry point (the signature of numpy_impl.run): run(fixture) -> dict of torch tensors (out_idx, pool,
split_counters, q_normed, kbar, logits), which replay converts (outputs.py: device to host, T as bits).
  python -m qsa_fixture replay --impl qsa_fixture.torch_impl:run fixtures/cases/*
torch is imported on the first call, so this module loads (and the CLI's --impl resolves) without it.
"""
import os

import numpy as np

from .fixture import HEAD_DIM, INDEX_WIDTH as WIDTH, NUM_HEADS, TOPK
from .numerics import CANONICAL_NAN, INV_SQRT_128, NEG_FLT_MAX

NEG_FLT_MAX, INV_SQRT_128 = float(NEG_FLT_MAX), float(INV_SQRT_128)  # section 4's constants as torch scalars


def _torch():
    try:
        import torch
    except ImportError as e:
        raise RuntimeError("qsa_fixture.torch_impl needs PyTorch, which is not installed "
                           f"(pip install 'qsa-fixture[torch]' or see pytorch.org): {e}") from None
    return torch


class _Ctx:
    """torch, the device, T and the helpers that move uint16 bit arrays in and out."""

    def __init__(self, f):
        self.torch = torch = _torch()
        want = os.environ.get("QSA_TORCH_DEVICE")
        self.device = torch.device(want or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.T = torch.float16 if f.dtype == "half" else torch.bfloat16

    def t_from_bits(self, bits):
        """A T tensor holding exactly these uint16 bit patterns (NaN payloads, -0 and subnormals kept)."""
        a = np.ascontiguousarray(np.asarray(bits, np.uint16)).view(np.int16)
        return self.torch.from_numpy(a.copy()).to(self.device).view(self.T)

    def f32(self, a):
        return self.torch.from_numpy(np.ascontiguousarray(np.asarray(a, np.float32))).to(self.device)

    def to_t(self, x):
        """Cast float32 -> T (round to nearest even); EVERY NaN becomes 0x7FFF (section 4: casts to T),
        where torch keeps its own NaN pattern."""
        torch = self.torch
        nan_bits = torch.tensor(CANONICAL_NAN, dtype=torch.int16, device=x.device)
        bits = torch.where(torch.isnan(x), nan_bits, x.to(self.T).view(torch.int16))
        return bits.view(self.T)


def norm_rope(c, x, w, cs, eps):
    """normRope (section 4) over the last axis of float32 x [..., 128]: RMS norm with the raw gamma
    (x * rsqrt(mean(x^2) + eps) * (1 + w)), then neox rope on dims [0, 64) with cs [..., 64] (cos at
    [0, 32), sin at [32, 64)); dims [64, 128) pass through. Returns T."""
    torch = c.torch
    inv = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps)
    y = x * inv * (1.0 + w)
    cos, sin = cs[..., :32], cs[..., 32:64]
    a, b = y[..., :32], y[..., 32:64]
    o = torch.cat([a * cos - b * sin, b * cos + a * sin, y[..., 64:]], dim=-1)
    return c.to_t(o)


def compress(c, k4, w, cs, eps):
    """K1b for raw k blocks k4 [..., 4, 128] (T): the mean of the 4 tokens, rounded to T and read back
    (part of the contract), then normRope at pos 4g (cs rows)."""
    m = c.to_t(k4.float().sum(dim=-2) * 0.25).float()
    return norm_rope(c, m, w, cs, eps)


def scores(c, q, kbar):
    """K2/B2 logits of q [R, 4, 128] (T) against kbar [G, 128] (T): relu of each head's dot product
    (NaN and -0.0 to +0.0: torch.relu would keep a NaN), summed over heads, times 1/sqrt(128): [R, G]."""
    torch = c.torch
    dots = torch.matmul(q.float(), kbar.float().transpose(0, 1))  # [R, 4, G]
    dots = torch.where(dots > 0, dots, torch.zeros_like(dots))
    return dots.sum(dim=1) * INV_SQRT_128


def expand(c, order, n_vis, k_sel, tail):
    """K4 for rows with per-row nVis, kSel, tail (int64 [R]) and order [R, >= 1] (blocks in selection
    order): out[4i + j] = order[i] * 4 + j for i < kSel, then 4 nVis + j for j < tail, then -1."""
    torch = c.torch
    R = n_vis.shape[0]
    cols = torch.arange(WIDTH, device=c.device)[None, :]
    slot = torch.clamp(torch.div(cols, 4, rounding_mode="floor"), max=order.shape[1] - 1).expand(R, WIDTH)
    picked = torch.gather(order, 1, slot) * 4 + cols % 4
    kk = 4 * k_sel[:, None]
    out = torch.where(cols < kk, picked, torch.full_like(picked, -1))
    in_tail = (cols >= kk) & (cols < kk + tail[:, None])
    out = torch.where(in_tail, 4 * n_vis[:, None] + (cols - kk), out)
    return out.to(torch.int32)


class Pool:
    """The paged pool (section 3) with the page table on the host: an entry of -1, an id outside its
    plane ([0, numPages) for K, [numPages, 2 numPages) for V) or a slot >= maxPagesPerSeq is never
    dereferenced: writes are dropped, reads give +0.0."""

    def __init__(self, c, f):
        self.c, self.d = c, f.pool
        self.data = c.t_from_bits(f.inputs["pool"])  # [2 numPages, 128, numKVHeads, poolHeadDim] T
        self.pt = np.asarray(f.inputs["page_table"], np.int64)
        self.cols = slice(self.d["head_size"], self.d["head_size"] + HEAD_DIM)

    def pages(self, b, tokens, plane):
        """(page ids, rows, ok) for token positions `tokens` (int array) of sequence b."""
        tokens = np.asarray(tokens, np.int64)
        slot = tokens >> 7
        ok = slot < self.d["max_pages_per_seq"]
        pid = np.where(ok, self.pt[b, plane, np.minimum(slot, self.d["max_pages_per_seq"] - 1)], -1)
        lo = 0 if plane == 0 else self.d["num_pages"]
        ok &= (pid >= lo) & (pid < lo + self.d["num_pages"])
        return pid, tokens & 127, ok

    def _on_device(self, a):
        return self.c.torch.from_numpy(np.ascontiguousarray(a, np.int64)).to(self.c.device)

    def write(self, b, tokens, plane, values):
        """values [len(tokens), 128] T to head 0, columns [headSize, headSize + 128) of each token's row."""
        pid, row, ok = self.pages(b, tokens, plane)
        if ok.any():
            idx = self._on_device(np.flatnonzero(ok))
            self.data[self._on_device(pid[ok]), self._on_device(row[ok]), 0, self.cols] = values[idx]

    def read(self, b, tokens, plane):
        pid, row, ok = self.pages(b, tokens, plane)
        out = self.c.torch.zeros((len(pid), HEAD_DIM), dtype=self.c.T, device=self.c.device)  # +0.0
        if ok.any():
            idx = self._on_device(np.flatnonzero(ok))
            out[idx] = self.data[self._on_device(pid[ok]), self._on_device(row[ok]), 0, self.cols]
        return out


def prefill(c, f):
    torch = c.torch
    B, S, MB = f.batch_size, f.seq_len, (f.seq_len + 3) // 4
    eps = float(f.rms_eps)
    qk = c.t_from_bits(f.inputs["index_qk"])  # [B, S, 640]
    cs = c.f32(f.inputs["cos_sin"])
    ctx = np.clip(np.asarray(f.inputs["context_lengths"], np.int64), 0, S)  # preconditions: clamped to [0, S]
    wq, wk = c.t_from_bits(f.inputs["w_q"]).float(), c.t_from_bits(f.inputs["w_k"]).float()
    q_normed = torch.zeros((B, S, NUM_HEADS, HEAD_DIM), dtype=c.T, device=c.device)
    kbar = torch.zeros((B, MB, HEAD_DIM), dtype=c.T, device=c.device)
    logits = torch.full((B * S, MB), NEG_FLT_MAX, dtype=torch.float32, device=c.device)
    out = torch.full((B, S, WIDTH), -1, dtype=torch.int32, device=c.device)
    pool = Pool(c, f) if f.pool is not None else None
    for b in range(B):
        n = int(ctx[b])
        if n == 0:
            continue  # a padded sequence: zeros, all -1, nothing read
        # K1a on the rows t < ctx (padded rows are never read: they may hold NaN).
        q = qk[b, :n, :512].float().reshape(n, NUM_HEADS, HEAD_DIM)
        q_normed[b, :n] = norm_rope(c, q, wq, cs[:n, None, :], eps)
        nb = n // 4  # K1b on the complete blocks 4g + 3 < ctx
        if nb:
            kbar[b, :nb] = compress(c, qk[b, :4 * nb, 512:640].reshape(nb, 4, HEAD_DIM), wk, cs[0:4 * nb:4], eps)
        if pool is not None:  # section 5: every valid kbar to its V-tail, raw k of the incomplete block to K-tails
            pool.write(b, np.arange(nb) * 4, 1, kbar[b, :nb])
            tail_tokens = np.arange(n - n % 4, n)
            pool.write(b, tail_tokens, 0, qk[b, n - n % 4:n, 512:640])
        if nb:  # K2 over the rows t < ctx, in row chunks; block g visible iff g < (t + 1) / 4
            step = max(1, (1 << 24) // (NUM_HEADS * nb))
            for t0 in range(0, n, step):
                t1 = min(n, t0 + step)
                lg = scores(c, q_normed[b, t0:t1], kbar[b, :nb])
                t = torch.arange(t0, t1, device=c.device)[:, None]
                vis = torch.arange(nb, device=c.device)[None, :] < torch.div(t + 1, 4, rounding_mode="floor")
                logits[b * S + t0:b * S + t1, :nb] = torch.where(vis, lg, torch.full_like(lg, NEG_FLT_MAX))
        # Selection: logit descending, equal logits by ascending id = a STABLE descending sort of the ids
        # in ascending order (torch.topk does not promise the tie order). Visible logits are >= +0.0, so the
        # nVis visible blocks come first; K4 keeps the first min(512, nVis) in that order.
        rows = logits[b * S:b * S + n]
        order = torch.sort(rows, dim=1, descending=True, stable=True).indices[:, :TOPK]
        t = torch.arange(n, device=c.device)
        n_vis = torch.div(t + 1, 4, rounding_mode="floor")
        out[b, :n] = expand(c, order, n_vis, torch.clamp(n_vis, max=TOPK), (t + 1) % 4)
    res = {"out_idx": out, "q_normed": q_normed, "kbar": kbar, "logits": logits}
    if pool is not None:
        res["pool"] = pool.data
    return res


def decode(c, f):
    torch = c.torch
    B, maxb = f.batch_size, f.max_blocks
    eps = float(f.rms_eps)
    qk = c.t_from_bits(f.inputs["index_qk"])  # [B, 1, 640]
    cs = c.f32(f.inputs["cos_sin"])
    ctx = [int(x) for x in f.inputs["context_lengths"]]
    wq, wk = c.t_from_bits(f.inputs["w_q"]).float(), c.t_from_bits(f.inputs["w_k"]).float()
    pool = Pool(c, f)
    q_normed = torch.zeros((B, 1, NUM_HEADS, HEAD_DIM), dtype=c.T, device=c.device)
    logits = torch.full((B, maxb), NEG_FLT_MAX, dtype=torch.float32, device=c.device)
    out = torch.full((B, 1, WIDTH), -1, dtype=torch.int32, device=c.device)
    # Section 5: a row is invalid iff ctx < 1 or ctx / 4 > maxBlocks (floor); it writes nothing.
    valid = [n >= 1 and n // 4 <= maxb for n in ctx]
    for b in range(B):  # B1: q at pos = ctx - 1; the new raw k to its K-tail, or complete block ctx/4 - 1
        if not valid[b]:
            continue
        n = ctx[b]
        pos = n - 1
        q = qk[b, 0, :512].float().reshape(NUM_HEADS, HEAD_DIM)
        q_normed[b, 0] = norm_rope(c, q, wq, cs[pos], eps)
        k_new = qk[b, 0, 512:640]
        if n % 4 != 0:
            pool.write(b, [pos], 0, k_new[None])
        else:  # tokens 4g..4g+2 from their K-tails (+0.0 where unaddressable), 4g+3 from the input
            g = n // 4 - 1
            k4 = torch.cat([pool.read(b, 4 * g + np.arange(3), 0), k_new[None]], dim=0)
            pool.write(b, [4 * g], 1, compress(c, k4, wk, cs[4 * g], eps)[None])
    for b in range(B):  # B2: logits of blocks g < ctx/4 against the kbar read back from the V-tails
        n_vis = ctx[b] // 4 if valid[b] else 0
        if n_vis:
            kb = pool.read(b, np.arange(n_vis) * 4, 1)
            logits[b, :n_vis] = scores(c, q_normed[b], kb)[0]
    split = None
    if f.split_counters:  # B3 zeroes rows b < B
        split = torch.zeros(f.inputs["split_counters"].shape, dtype=torch.int32, device=c.device)
    for b in range(B):  # B3: the selected SET in ascending block id; every block when nVis <= 512
        if not valid[b]:
            continue
        n = ctx[b]
        n_vis = n // 4
        if n_vis > TOPK:
            top = torch.sort(logits[b, :n_vis], descending=True, stable=True).indices[:TOPK]
            sel = torch.sort(top).values
        else:
            sel = torch.arange(max(n_vis, 1), device=c.device)  # (one dummy column when nVis = 0)
        one = torch.tensor([n_vis], device=c.device)
        out[b, 0] = expand(c, sel[None], one, torch.clamp(one, max=TOPK), one * 0 + n % 4)[0]
    res = {"out_idx": out, "q_normed": q_normed, "logits": logits, "pool": pool.data}
    if split is not None:
        res["split_counters"] = split
    return res


def run(f):
    """The replay entry point: the outputs of the pipeline the fixture records."""
    c = _Ctx(f)
    mm = c.torch.backends.cuda.matmul
    tf32, mm.allow_tf32 = mm.allow_tf32, False  # TF32 products (10-bit mantissas) are outside section 9's freedoms
    try:
        with c.torch.no_grad():
            return decode(c, f) if f.is_decode else prefill(c, f)
    finally:
        mm.allow_tf32 = tf32

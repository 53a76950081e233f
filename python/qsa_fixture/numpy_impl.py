"""A NumPy implementation of the QSA indexer contract (/work/shared/CONTRACT.md, profile `ieee`):
prefill and one decode step, bit for bit, written from the contract alone (a third implementation
next to the CPU reference and the kernels). Slow is fine; the per-lane arithmetic is vectorized.

Entry point for `python -m qsa_fixture replay --impl qsa_fixture.numpy_impl:run`:
run(fixture) -> dict of outputs (out_idx, pool, split_counters, q_normed, kbar, logits).
"""
import numpy as np

from .fixture import HEAD_DIM, INDEX_WIDTH as WIDTH, NUM_HEADS, TOPK
from .numerics import (INV_SQRT_128, NEG_FLT_MAX, fma, from_f32, relu, rsqrt_rn, to_f32, warp_sum)

F = np.float32


def norm_rope(x, w, cos_sin_rows, eps, dtype):
    """normRope of section 4 over rows x [..., 128] (float32, cast from T), gamma w [128] (float32),
    cos_sin_rows [..., 64]; returns T bits [..., 128]."""
    x = x.astype(F)
    lanes = x.reshape(x.shape[:-1] + (32, 4))  # lane l owns dims 4l..4l+3
    partial = np.zeros(x.shape[:-1] + (32,), F)  # +0.0
    for i in range(4):
        partial = fma(lanes[..., i], lanes[..., i], partial)
    s = warp_sum(partial)
    v = fma(s, F(0.0078125), F(eps))
    inv = rsqrt_rn(v)[..., None]
    xn = x * inv  # rounding after each product and after 1 + w
    g = F(1.0) + w
    y = xn * g
    c, sn = cos_sin_rows[..., :32].astype(F), cos_sin_rows[..., 32:64].astype(F)
    a, b = y[..., :32], y[..., 32:64]
    o = y.copy()
    o[..., :32] = fma(a, c, -(b * sn))
    o[..., 32:64] = fma(b, c, a * sn)
    return from_f32(o, dtype)


def compress(k4, w, cos_sin_row, eps, dtype):
    """K1b for blocks k4 [..., 4, 128] of raw k (float32): mean ((k0+k1)+k2)+k3 times 0.25, cast to T
    and read back (part of the contract), then normRope at pos = 4g."""
    m = (((k4[..., 0, :] + k4[..., 1, :]) + k4[..., 2, :]) + k4[..., 3, :]) * F(0.25)
    m = to_f32(from_f32(m, dtype), dtype)
    return norm_rope(m, w, cos_sin_row, eps, dtype)


def scores(q, kbar):
    """K2 logits of q [R, 4, 128] (float32) against kbar [R, G, 128] (float32): [R, G]."""
    qh = q[:, None, :, :]  # [R, 1, 4, 128]
    kg = kbar[:, :, None, :]  # [R, G, 1, 128]
    partial = np.zeros(np.broadcast_shapes(qh.shape, kg.shape)[:-1] + (32,), F)
    for i in range(4):  # partial[l] = fma(q[l + 32i], kbar[l + 32i], partial[l])
        partial = fma(qh[..., 32 * i:32 * i + 32], kg[..., 32 * i:32 * i + 32], partial)
    dots = relu(warp_sum(partial))  # [R, G, 4]
    total = ((dots[..., 0] + dots[..., 1]) + dots[..., 2]) + dots[..., 3]
    return (total * INV_SQRT_128).astype(F)


def select(logits, n_vis):
    """Blocks ordered by logit descending, equal logits by ascending id; the first min(512, nVis)."""
    order = np.argsort(-logits[:n_vis], kind="stable")  # stable over ascending ids: ties by id
    return order[:min(TOPK, n_vis)]


def expand(sel, n_vis, tail):
    """K4: out[4i + j] = sel[i] * 4 + j, then the causal tail 4 nVis + j, then -1 up to 2051."""
    row = np.full(WIDTH, -1, np.int32)
    k = len(sel)
    row[:4 * k] = (np.asarray(sel, np.int64)[:, None] * 4 + np.arange(4)[None, :]).reshape(-1)
    row[4 * k:4 * k + tail] = 4 * n_vis + np.arange(tail)
    return row


class Pool:
    """The paged pool of section 3 with the per-plane guards: a -1 entry, an id outside its plane
    ([0, numPages) for K, [numPages, 2 numPages) for V) or a slot >= maxPagesPerSeq is never
    dereferenced: writes are dropped and reads give +0.0 for every element."""

    def __init__(self, data, page_table, dims):
        self.data, self.pt, self.d = data, page_table, dims
        self.cols = slice(dims["head_size"], dims["head_size"] + HEAD_DIM)

    def _page(self, b, t, plane):
        slot = t >> 7
        if slot >= self.d["max_pages_per_seq"]:
            return None
        page = int(self.pt[b, plane, slot])
        n = self.d["num_pages"]
        lo = 0 if plane == 0 else n
        return page if lo <= page < lo + n else None

    def read(self, b, t, plane):
        page = self._page(b, t, plane)
        if page is None:
            return np.zeros(HEAD_DIM, np.uint16)
        return self.data[page, t & 127, 0, self.cols].copy()

    def write(self, b, t, plane, bits):
        page = self._page(b, t, plane)
        if page is not None:
            self.data[page, t & 127, 0, self.cols] = bits


def prefill(f):
    dt, B, S = f.dtype, f.batch_size, f.seq_len
    MB = (S + 3) // 4
    eps = f.rms_eps
    qk = f.inputs["index_qk"]
    cs = f.inputs["cos_sin"].astype(F)
    ctx = np.clip(f.inputs["context_lengths"].astype(np.int64), 0, S)  # preconditions: clamped to [0, S]
    wq, wk = to_f32(f.inputs["w_q"], dt), to_f32(f.inputs["w_k"], dt)
    q_normed = np.zeros((B, S, NUM_HEADS, HEAD_DIM), np.uint16)
    kbar = np.zeros((B, MB, HEAD_DIM), np.uint16)
    logits = np.full((B * S, MB), NEG_FLT_MAX, F)
    out = np.full((B, S, WIDTH), -1, np.int32)
    pool = None
    if f.pool is not None:
        pool = Pool(f.inputs["pool"].copy(), f.inputs["page_table"], f.pool)
    for b in range(B):
        c = int(ctx[b])
        if c == 0:
            continue
        # K1a on valid rows only (padded rows stay exact zeros and are never read).
        q = to_f32(qk[b, :c, :512], dt).reshape(c, NUM_HEADS, HEAD_DIM)
        q_normed[b, :c] = norm_rope(q, wq, cs[:c, None, :], eps, dt)
        # K1b on valid blocks 4g + 3 < ctx.
        nb = c // 4
        if nb:
            k = to_f32(qk[b, :4 * nb, 512:640], dt).reshape(nb, 4, HEAD_DIM)
            kbar[b, :nb] = compress(k, wk, cs[np.arange(nb) * 4], eps, dt)
        if pool is not None:
            for g in range(nb):  # every valid kbar to its V-tail (token 4g)
                pool.write(b, 4 * g, 1, kbar[b, g])
            for t in range(c - c % 4, c):  # raw k of the incomplete block, bit-unmodified, to K-tails
                pool.write(b, t, 0, qk[b, t, 512:640])
        # K2 over the rows t < ctx; block g visible iff g < (t + 1) / 4.
        if nb:
            qf = to_f32(q_normed[b, :c], dt)
            kf = to_f32(kbar[b, :nb], dt)
            step = max(1, 32768 // nb)  # rows per chunk: bounds the [rows, nb, 4, 32] temporaries
            for t0 in range(0, c, step):
                t1 = min(c, t0 + step)
                lg = scores(qf[t0:t1], np.broadcast_to(kf, (t1 - t0, nb, HEAD_DIM)))
                vis = np.arange(nb)[None, :] < (np.arange(t0, t1)[:, None] + 1) // 4
                logits[b * S + t0:b * S + t1, :nb] = np.where(vis, lg, NEG_FLT_MAX)
        for t in range(c):  # selection in contract order, K4
            n_vis = (t + 1) // 4
            sel = select(logits[b * S + t], n_vis)
            out[b, t] = expand(sel, n_vis, (t + 1) % 4)
    res = {"out_idx": out, "q_normed": q_normed, "kbar": kbar, "logits": logits}
    if pool is not None:
        res["pool"] = pool.data
    return res


def decode(f):
    dt, B, maxb = f.dtype, f.batch_size, f.max_blocks
    eps = f.rms_eps
    qk = f.inputs["index_qk"]
    cs = f.inputs["cos_sin"].astype(F)
    ctx = f.inputs["context_lengths"].astype(np.int64)
    wq, wk = to_f32(f.inputs["w_q"], dt), to_f32(f.inputs["w_k"], dt)
    pool = Pool(f.inputs["pool"].copy(), f.inputs["page_table"], f.pool)
    q_normed = np.zeros((B, 1, NUM_HEADS, HEAD_DIM), np.uint16)
    logits = np.full((B, maxb), NEG_FLT_MAX, F)
    out = np.full((B, 1, WIDTH), -1, np.int32)
    # Section 5: invalid iff ctx < 1 or ctx / 4 > maxBlocks (floor: B2 writes g < ctx/4 only).
    valid = [(int(c) >= 1 and int(c) // 4 <= maxb) for c in ctx]
    for b in range(B):  # B1
        if not valid[b]:
            continue
        c = int(ctx[b])
        pos = c - 1
        q = to_f32(qk[b, 0, :512], dt).reshape(NUM_HEADS, HEAD_DIM)
        q_normed[b, 0] = norm_rope(q, wq, cs[pos][None, :], eps, dt)
        if c % 4 != 0:
            pool.write(b, pos, 0, qk[b, 0, 512:640])  # the new raw k to its K-tail
        else:
            g = c // 4 - 1  # block g completes: tokens 4g..4g+2 from K-tails, 4g+3 from the input
            raw = np.stack([pool.read(b, 4 * g + j, 0) for j in range(3)] + [qk[b, 0, 512:640]])
            kb = compress(to_f32(raw, dt)[None], wk, cs[4 * g][None, :], eps, dt)[0]
            pool.write(b, 4 * g, 1, kb)
    for b in range(B):  # B2: logits for g < ctx/4, read back from the V-tails
        if not valid[b]:
            continue
        n_vis = int(ctx[b]) // 4
        if n_vis:
            kf = to_f32(np.stack([pool.read(b, 4 * g, 1) for g in range(n_vis)]), dt)
            qf = to_f32(q_normed[b, 0], dt)
            logits[b, :n_vis] = scores(qf[None], kf[None])[0]
    split = None
    if f.split_counters:
        split = np.zeros_like(f.inputs["split_counters"])  # B3 zeroes rows b < B
    for b in range(B):  # B3: the selected SET, emitted in ascending block id; K4
        if not valid[b]:
            continue
        c = int(ctx[b])
        n_vis = c // 4
        sel = np.sort(select(logits[b], n_vis)) if n_vis > TOPK else np.arange(n_vis)
        out[b, 0] = expand(sel, n_vis, c % 4)
    res = {"out_idx": out, "q_normed": q_normed, "logits": logits, "pool": pool.data}
    if split is not None:
        res["split_counters"] = split
    return res


def run(f):
    """The replay entry point: outputs of the pipeline the fixture records. Overflow and NaN are part
    of the contract's arithmetic (inf q rows, NaN dots), so NumPy's warnings about them are silenced."""
    with np.errstate(all="ignore"):
        return decode(f) if f.is_decode else prefill(f)

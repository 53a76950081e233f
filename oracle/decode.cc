// The decode pipeline of section 5 (one new token per sequence, ctx >= 1 includes it, pos = ctx - 1):
// B1 q-prep and the pool write of the new token, B2 logits from the V-tails, B3 split counters, selection
// and expansion. A row with ctx < 1 or ctx / 4 > maxBlocks (floor) is invalid: zero qNormed, an all -1
// row, no logit, no pool cell.
#include <algorithm>
#include <vector>

#include "oracle/fast.h"
#include "oracle/plants.h"
#include "oracle/stages.h"

namespace qsa {
namespace oracle {
namespace {

bool validRow(DecodeIo const& io, int32_t b) {
    int32_t const ctx = io.contextLengths[b];
    return !(ctx < 1 || ctx / 4 > io.maxBlocks);
}

uint16_t const* qkRow(DecodeIo const& io, int32_t b) {
    return io.indexQk + int64_t(b) * kQkWidth;
}

// B1: q-prep at pos = ctx - 1 (K1a numerics). If ctx % 4 != 0 the new raw k goes to its K-tail; else block
// g = ctx / 4 - 1 is complete: tokens 4g..4g+2 from their K-tails, token 4g + 3 from the input, K1b numerics
// verbatim, kbar to the V-tail of token 4g; the completing token's own raw k is NOT stored.
void b1Prep(DecodeIo const& io, DecodeSlots const& ws) {
    float wq[kDim], wk[kDim];
    gammaOf(io.act, io.wQ, wq);
    gammaOf(io.act, io.wK, wk);
    int32_t maxCtx = 0; // Plant 10 only
    for (int32_t b = 0; b < io.B; ++b)
        maxCtx = std::max(maxCtx, io.contextLengths[b]);
    for (int32_t b = 0; b < io.B; ++b) {
        uint16_t* q = ws.qNormed + int64_t(b) * kHeads * kDim;
        if (!validRow(io, b)) {
            std::fill(q, q + kHeads * kDim, uint16_t(0));
            if (kPlant == 18) { // Plant 18: the zero made from the input as x - x (NaN for NaN and Inf)
                for (int i = 0; i < kHeads * kDim; ++i) {
                    float const x = fromT(io.act, qkRow(io, b)[i]);
                    q[i] = toT(io.act, x - x);
                }
            }
            continue;
        }
        int32_t const ctx = io.contextLengths[b];
        int64_t const pos = ctx - 1;
        // Plant 10: the q rope at pos = ctx (rows holding the batch's largest ctx keep ctx - 1: cosSin is
        // only guaranteed max ctx rows).
        int64_t const qPos = kPlant == 10 && ctx < maxCtx ? ctx : pos;
        for (int32_t h = 0; h < kHeads; ++h) {
            float x[kDim];
            for (int d = 0; d < kDim; ++d)
                x[d] = fromT(io.act, qkRow(io, b)[kDim * h + d]);
            float const* row = io.cosSin + qPos * kCosSinWidth;
            // section 9.1: decode's legal arithmetic (not prefill's), the rsqrt side by (pos, h). Plant 15 (section 4
            // only): the q sum of squares' fma chain run from x[4l+3] (kernel mutant 31).
            normRopeOf(io.act, x, wq, row, io.rmsEps, q + h * kDim, fast::Flavor::kDecode, qPos + h, kPlant == 15);
        }
        uint16_t const* newK = qkRow(io, b) + kRawKCol;
        if (ctx % 4 != 0) {
            writeTail(io.pool, b, Plane::kK, pos, newK);
            continue;
        }
        int64_t const g = ctx / 4 - 1;
        // Plant 17: a block whose K page may not be dereferenced is skipped (no V-tail write).
        if (kPlant == 17 && tail(io.pool, b, Plane::kK, 4 * g) == nullptr)
            continue;
        uint16_t k[3][kDim];
        for (int j = 0; j < 3; ++j) {
            int64_t const src = kPlant == 6 && j == 0 ? 4 * g + 1 : 4 * g + j; // Plant 6: row 4g + 1 for 4g
            readTail(io.pool, b, Plane::kK, src, k[j]);
        }
        float m[kDim];
        for (int d = 0; d < kDim; ++d) {
            float const k0 = fromT(io.act, k[0][d]);
            float const k1 = fromT(io.act, k[1][d]);
            float const k2 = fromT(io.act, k[2][d]);
            float const k3 = fromT(io.act, newK[d]);
            float const sum = ((k0 + k1) + k2) + k3;
            float const mean = kFast ? fast::blockMean(k0, k1, k2, k3, fast::Flavor::kDecode) : sum * 0.25f;
            m[d] = fromT(io.act, toT(io.act, mean));
        }
        uint16_t kbar[kDim];
        int64_t const kPos = kPlant == 25 ? 4 * g + 3 : 4 * g; // Plant 25: the rope at 4g + 3 (K1b too)
        float const* row = io.cosSin + kPos * kCosSinWidth;
        // section 9.1: decode's legal arithmetic, the rsqrt side by g (the other one)
        normRopeOf(io.act, m, wk, row, io.rmsEps, kbar, fast::Flavor::kDecode, g);
        writeTail(io.pool, b, Plane::kV, 4 * g, kbar);
    }
}

// B2: logits[b][g] for g < ctx / 4 from the V-tails read back from the pool (the block B1 just completed
// included; an unaddressable cell reads +0.0), K2 numerics; only the valid prefix is written.
void b2Scores(DecodeIo const& io, DecodeSlots const& ws) {
    for (int32_t b = 0; b < io.B; ++b) {
        if (!validRow(io, b))
            continue;
        float q[kHeads * kDim];
        uint16_t const* qs = ws.qNormed + int64_t(b) * kHeads * kDim;
        for (int e = 0; e < kHeads * kDim; ++e) {
            int const h = e / kDim, src = kPlant == 11 ? (3 - h) * kDim + e % kDim : e; // Plant 11: head order 3..0
            q[e] = fromT(io.act, qs[src]);
        }
        int64_t const nVis = io.contextLengths[b] / 4;
        for (int64_t g = 0; g < nVis; ++g) {
            uint16_t bits[kDim];
            // Plant 26: blocks of the second page on read the V-tail one page (128 tokens) earlier.
            readTail(io.pool, b, Plane::kV, kPlant == 26 && 4 * g >= 128 ? 4 * g - 128 : 4 * g, bits);
            float kbar[kDim];
            for (int d = 0; d < kDim; ++d)
                kbar[d] = fromT(io.act, bits[d]);
            ws.logits[int64_t(b) * io.maxBlocks + g] =
                kFast ? fast::logit(q, kbar, fast::Flavor::kDecode) : logit(q, kbar);
        }
    }
}

// B3: zero split counter rows b < B (when given), select the same SET as the prefill order (logit
// descending by B3's key, ties by ascending id; every block when nVis <= 512, reading no logit), emit it in
// ascending block id, expand with tail = ctx % 4.
void b3Select(DecodeIo const& io, DecodeSlots const& ws) {
    if (io.splitCounters != nullptr)
        std::fill(io.splitCounters, io.splitCounters + int64_t(io.B) * io.pool.numKVHeads, 0);
    std::vector<int32_t> sel;
    for (int32_t b = 0; b < io.B; ++b) {
        int32_t* out = io.outIdx + int64_t(b) * kWidth;
        if (!validRow(io, b)) {
            minusOneRow(out);
            continue;
        }
        int32_t const ctx = io.contextLengths[b];
        int32_t const nVis = ctx / 4;
        int32_t const kSel = std::min(kTopK, nVis);
        sel.resize(size_t(nVis));
        for (int32_t g = 0; g < nVis; ++g)
            sel[g] = g;
        if (nVis > kTopK) {
            float const* logits = ws.logits + int64_t(b) * io.maxBlocks;
            std::sort(sel.begin(), sel.end(), [logits](int32_t x, int32_t y) {
                uint32_t const kx = decodeKey(logits[x]), ky = decodeKey(logits[y]);
                return kx != ky ? kx > ky : x < y;
            });
            sel.resize(size_t(kSel));
            std::sort(sel.begin(), sel.end()); // emitted in ascending block id
        }
        expandRow(out, sel.data(), kSel, nVis, ctx % 4);
    }
}

} // namespace

void runDecode(DecodeIo const& io, DecodeSlots const& ws) {
    b1Prep(io, ws);
    b2Scores(io, ws);
    b3Select(io, ws);
}

} // namespace oracle
} // namespace qsa

// The prefill pipeline of section 5, one function per stage: K1a; K1b (paged: also the V-tails) and the
// raw-k tail scatter; then for each chunk of Rc rows: idsFill, K2, the sort, K4. Stages talk through the
// workspace slots of section 6 only, as stored (K2 reads the T-rounded qNormed and kbar).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "oracle/fast.h"
#include "oracle/plants.h"
#include "oracle/stages.h"

namespace qsa {
namespace oracle {
namespace {

// Precondition of section 5: prefill context lengths outside [0, S] act clamped.
int32_t ctxOf(PrefillIo const& io, int32_t b) {
    return std::min(std::max(io.contextLengths[b], 0), io.S);
}

uint16_t const* qkRow(PrefillIo const& io, int32_t b, int64_t t) {
    return io.indexQk + (int64_t(b) * io.S + t) * kQkWidth;
}

// K1a: qNormed[b][t][h] = normRope(q head h of row (b, t), wQ, pos = t) for t < ctx[b]; rows t >= ctx[b]
// are exact zeros and their input is never read.
void k1aQPrep(PrefillIo const& io, PrefillSlots const& ws) {
    float w[kDim];
    gammaOf(io.act, io.wQ, w);
    for (int32_t b = 0; b < io.B; ++b) {
        int32_t const ctx = ctxOf(io, b);
        for (int32_t t = 0; t < io.S; ++t) {
            uint16_t* q = ws.qNormed + (int64_t(b) * io.S + t) * kHeads * kDim;
            if (t >= ctx) {
                if (kPlant != 12) // Plant 12: padded qNormed rows left unwritten
                    std::fill(q, q + kHeads * kDim, uint16_t(0));
                continue;
            }
            for (int32_t h = 0; h < kHeads; ++h) {
                float x[kDim];
                for (int d = 0; d < kDim; ++d)
                    x[d] = fromT(io.act, qkRow(io, b, t)[kDim * h + d]);
                float const* row = io.cosSin + int64_t(t) * kCosSinWidth;
                // section 9.1: prefill's legal arithmetic, the rsqrt side by (t, h)
                normRopeOf(io.act, x, w, row, io.rmsEps, q + h * kDim, fast::Flavor::kPrefill, t + h);
            }
        }
    }
}

// K1b: block g valid iff 4g + 3 < ctx[b]; m = (((k0 + k1) + k2) + k3) * 0.25f per dim, cast to T and read
// back, kbar = normRope(m, wK, pos = 4g). Invalid blocks are exact zeros. With a pool every valid kbar is
// also written to the V-tail of token 4g.
void k1bCompress(PrefillIo const& io, PrefillSlots const& ws) {
    int64_t const MB = blocksOf(io.S);
    float w[kDim];
    gammaOf(io.act, io.wK, w);
    for (int32_t b = 0; b < io.B; ++b) {
        int32_t const ctx = ctxOf(io, b);
        for (int64_t g = 0; g < MB; ++g) {
            uint16_t* kbar = ws.kbar + (b * MB + g) * kDim;
            if (!(4 * g + 3 < ctx)) {
                if (kPlant != 13) // Plant 13: kbar of invalid blocks left unwritten
                    std::fill(kbar, kbar + kDim, uint16_t(0));
                continue;
            }
            float m[kDim];
            for (int d = 0; d < kDim; ++d) {
                float const k0 = fromT(io.act, qkRow(io, b, 4 * g + 0)[kRawKCol + d]);
                float const k1 = fromT(io.act, qkRow(io, b, 4 * g + 1)[kRawKCol + d]);
                float const k2 = fromT(io.act, qkRow(io, b, 4 * g + 2)[kRawKCol + d]);
                float const k3 = fromT(io.act, qkRow(io, b, 4 * g + 3)[kRawKCol + d]);
                float sum = ((k0 + k1) + k2) + k3;
                if (kPlant == 16) // Plant 16: the block sum pairwise (kernel mutant 8)
                    sum = (k0 + k1) + (k2 + k3);
                float const mean = kFast ? fast::blockMean(k0, k1, k2, k3, fast::Flavor::kPrefill) : sum * 0.25f;
                m[d] = fromT(io.act, toT(io.act, mean)); // the cast to T is part of the contract
            }
            int64_t const pos = kPlant == 25 ? 4 * g + 3 : 4 * g; // Plant 25: the rope at 4g + 3 (B1 too)
            float const* row = io.cosSin + pos * kCosSinWidth;
            // section 9.1: prefill's legal arithmetic, the rsqrt side by g
            normRopeOf(io.act, m, w, row, io.rmsEps, kbar, fast::Flavor::kPrefill, g);
            if (io.pool != nullptr)
                writeTail(*io.pool, b, Plane::kV, 4 * g, kbar);
        }
    }
}

// Plant 14 only: the K-tail write of token t with the upper plane bound missing (an id >= numPages, past
// the K plane, is written; -1 and a slot >= maxPagesPerSeq still are not).
void writeTailNoUpperGuard(Pool const& p, int32_t b, int64_t t, uint16_t const k[kDim]) {
    int64_t const slot = t >> 7;
    if (slot >= p.maxPagesPerSeq)
        return;
    int32_t const page = p.pageTable[int64_t(b) * 2 * p.maxPagesPerSeq + slot];
    if (page >= p.numPages) // [0, numPages) is written by the correct scatter already
        std::memcpy(p.data + elementOffset(p, page, t & 127, 0, p.headSize), k, kDim * sizeof(uint16_t));
}

// The raw-k tail scatter: raw k of tokens [ctx - ctx % 4, ctx), bit-unmodified, to their K-tails.
void rawKTailScatter(PrefillIo const& io) {
    for (int32_t b = 0; b < io.B; ++b) {
        int32_t const ctx = ctxOf(io, b);
        for (int32_t t = ctx - ctx % 4; t < ctx; ++t) {
            uint16_t const* k = qkRow(io, b, t) + kRawKCol;
            writeTail(*io.pool, b, Plane::kK, t, k);
            if (kPlant == 7 && io.pool->numKVHeads >= 2) // Plant 7: also head numKVHeads - 1
                writeTail(*io.pool, b, Plane::kK, t, k, io.pool->numKVHeads - 1);
            if (kPlant == 14) // Plant 14: K ids checked against the lower bound only
                writeTailNoUpperGuard(*io.pool, b, t, k);
        }
    }
}

// idsFill: values of chunk row i, column g = g (the ascending ids the stable sort carries).
void idsFill(PrefillSlots const& ws, int64_t n, int64_t MB) {
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t g = 0; g < MB; ++g)
            ws.values[i * MB + g] = int32_t(g);
    }
}

// kbar of sequence b read back from its slot as float (K2 consumes the T-rounded values as stored).
class KbarOfSequence {
public:
    KbarOfSequence(PrefillIo const& io, PrefillSlots const& ws) : io_(io), ws_(ws), f_(blocksOf(io.S) * kDim) {}
    float const* block(int32_t b, int64_t g) {
        if (b != b_) {
            int64_t const MB = blocksOf(io_.S);
            uint16_t const* src = ws_.kbar + b * MB * kDim;
            for (int64_t e = 0; e < MB * kDim; ++e)
                f_[e] = fromT(io_.act, src[e]);
            b_ = b;
        }
        return &f_[g * kDim];
    }

private:
    PrefillIo const& io_;
    PrefillSlots const& ws_;
    std::vector<float> f_;
    int32_t b_ = -1;
};

// K2 for the chunk rows [r0, r0 + n): block g of row (b, t) is visible iff t < ctx[b] and g < (t + 1) / 4;
// visible entries get the logit, invisible ones (and whole padded rows) -FLT_MAX, reading nothing.
void k2Scores(PrefillIo const& io, PrefillSlots const& ws, KbarOfSequence& kbar, int64_t r0, int64_t n) {
    int64_t const MB = blocksOf(io.S);
    for (int64_t i = 0; i < n; ++i) {
        int32_t const b = int32_t((r0 + i) / io.S);
        int32_t const t = int32_t((r0 + i) % io.S);
        int64_t const nVis = t < ctxOf(io, b) ? (t + 1) / 4 : 0;
        float* keys = ws.keys + i * MB;
        float q[kHeads * kDim];
        if (nVis > 0) {
            uint16_t const* qs = ws.qNormed + (r0 + i) * kHeads * kDim;
            for (int e = 0; e < kHeads * kDim; ++e)
                q[e] = fromT(io.act, qs[e]);
        }
        for (int64_t g = 0; g < MB; ++g) {
            if (g >= nVis) {
                if (kPlant != 4) // Plant 4: invisible entries left unwritten
                    keys[g] = -FLT_MAX;
                continue;
            }
            float l = kFast ? fast::logit(q, kbar.block(b, g), fast::Flavor::kPrefill) : logit(q, kbar.block(b, g));
            if (kPlant == 1 && g % 2 == 1 && l > 0.0f && std::isfinite(l)) // Plant 1: one ulp lower
                l = std::nextafter(l, 0.0f);
            keys[g] = l;
        }
    }
}

// The sort of each chunk row over all MB entries (invisible ones included), as CUB's stable
// SortPairsDescending: keys are the logits (by CUB's radix key: -0.0 counts as +0.0, NaN by its bits),
// values the ids idsFill wrote; equal keys keep their input order (ascending block id). Results to
// keysAlt / valuesAlt.
void sortRows(PrefillSlots const& ws, int64_t n, int64_t MB) {
    struct Entry {
        uint32_t key;
        int32_t value;
        float logit;
    };
    std::vector<Entry> row(static_cast<size_t>(MB));
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t g = 0; g < MB; ++g) {
            float const l = ws.keys[i * MB + g];
            row[g] = Entry{prefillKey(l), ws.values[i * MB + g], l};
        }
        std::stable_sort(row.begin(), row.end(), [](Entry const& x, Entry const& y) {
            if (kPlant == 27 && x.key == y.key) // Plant 27: equal logits by descending id (kernel mutant 21)
                return x.value > y.value;
            return x.key > y.key;
        });
        for (int64_t g = 0; g < MB; ++g) {
            ws.keysAlt[i * MB + g] = row[g].logit;
            ws.valuesAlt[i * MB + g] = row[g].value;
        }
    }
}

// K4 for the chunk rows: the first kSel = min(512, nVis) sorted ids, emitted in sorted order, then the
// causal tail (t + 1) % 4; padded rows (t >= ctx[b], ctx[b] == 0) all -1.
void k4Expand(PrefillIo const& io, PrefillSlots const& ws, int64_t r0, int64_t n) {
    int64_t const MB = blocksOf(io.S);
    int64_t const shift = kPlant == 9 && r0 > 0 ? 1 : 0; // Plant 9: later chunks expand one row early
    for (int64_t i = 0; i < n; ++i) {
        int64_t const r = r0 + i - shift;
        int32_t const b = int32_t(r / io.S);
        int32_t const t = int32_t(r % io.S);
        int32_t* out = io.outIdx + r * kWidth;
        bool const padded = t >= ctxOf(io, b) || (kPlant == 5 && b > 0 && t >= ctxOf(io, 0)); // Plant 5
        if (padded) {
            if (kPlant != 3) // Plant 3: padded rows left unwritten
                minusOneRow(out);
            continue;
        }
        int32_t const nVis = (t + 1) / 4;
        int32_t const kSel = std::min(kTopK, nVis);
        expandRow(out, ws.valuesAlt + i * MB, kSel, nVis, (t + 1) % 4);
        if (kPlant == 2 && (t + 1) % 4 == 3) // Plant 2: the future token t + 1 as a 4th tail entry
            out[4 * kSel + 3] = 4 * nVis + 3;
    }
}

} // namespace

int64_t blocksOf(int32_t S) {
    return (int64_t(S) + 3) / 4;
}

int64_t chunkRows(int32_t B, int32_t S) {
    return std::min(int64_t(B) * S, std::max<int64_t>(8388608 / blocksOf(S), 256));
}

int64_t sortSlotElements(int32_t B, int32_t S) {
    int64_t const MB = blocksOf(S), rows = int64_t(B) * S;
    int64_t const bound = std::max<int64_t>(8388608, 256 * MB);
    return rows > bound / MB ? bound : rows * MB; // min(rows * MB, bound) without overflowing rows * MB
}

void runPrefill(PrefillIo const& io, PrefillSlots const& ws) {
    k1aQPrep(io, ws);
    k1bCompress(io, ws);
    if (io.pool != nullptr)
        rawKTailScatter(io);
    int64_t const rows = int64_t(io.B) * io.S, MB = blocksOf(io.S), rc = chunkRows(io.B, io.S);
    KbarOfSequence kbar(io, ws);
    for (int64_t r0 = 0; r0 < rows; r0 += rc) {
        int64_t const n = std::min(rc, rows - r0);
        idsFill(ws, n, MB);
        k2Scores(io, ws, kbar, r0, n);
        sortRows(ws, n, MB);
        k4Expand(io, ws, r0, n);
    }
}

} // namespace oracle
} // namespace qsa

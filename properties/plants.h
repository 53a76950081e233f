// Hooks of reference_impl.cc. With QSA_PLANT == 0 (always, in every target of //properties/...) each hook
// is the plain contract step. A non-zero QSA_PLANT compiles in ONE deliberate bug, used once per contract to
// prove that its property catches and shrinks it (README.md, "Planted bugs"):
//   bazel test //properties:<contract>_test --per_file_copt=properties/reference_impl.cc@-DQSA_PLANT=<n>
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "reference/stages.h"

namespace qsa {
namespace prop {
namespace plant {

inline int32_t clampedCtx(int32_t const* ctx, int32_t b, int32_t S) {
    return std::min(std::max(ctx[b], 0), S);
}

// Plant 8 (workspace): alignment checked modulo 64 instead of 128.
constexpr uintptr_t kWorkspaceAlign = QSA_PLANT == 8 ? 64 : 128;

// Plant 1 (differential): K2 rounds positive logits of odd blocks one ulp lower.
// Plant 4 (determinism): K2 leaves invisible entries unwritten (the sort then reads workspace garbage).
inline void scores(ref::DType dt, float* keys, uint16_t const* qNormed, uint16_t const* kbar, int32_t const* ctx,
                   int32_t B, int32_t S, int32_t r0, int32_t r1) {
    int32_t const MB = (S + 3) / 4;
    if (QSA_PLANT == 4) {
        std::vector<float> tmp(size_t(r1 - r0) * MB);
        ref::scores(dt, tmp.data(), qNormed, kbar, ctx, B, S, r0, r1);
        for (size_t i = 0; i < tmp.size(); ++i) {
            if (tmp[i] != -FLT_MAX)
                keys[i] = tmp[i];
        }
        return;
    }
    ref::scores(dt, keys, qNormed, kbar, ctx, B, S, r0, r1);
    if (QSA_PLANT == 1) {
        for (size_t i = 0; i < size_t(r1 - r0) * MB; ++i) {
            if ((i % MB) % 2 == 1 && keys[i] > 0.0f && std::isfinite(keys[i]))
                keys[i] = std::nextafter(keys[i], 0.0f);
        }
    }
}

// Plant 2 (layout): rows with (t + 1) % 4 == 3 get the future token t + 1 as a 4th tail entry.
// Plant 3 (padding): padded rows are left unwritten.
// Plant 5 (batch invariance): sequences b > 0 treat rows t >= ctx[0] as padding.
inline void expand(int32_t* out, int32_t const* sortedIds, int32_t const* ctx, int32_t B, int32_t S, int32_t r0,
                   int32_t r1) {
    size_t const W = ref::kIndexWidth;
    std::vector<int32_t> before;
    if (QSA_PLANT == 3)
        before.assign(out + size_t(r0) * W, out + size_t(r1) * W);
    // Plant 9 (differential, chunked): chunks after the first are expanded one row early (row offset error).
    int32_t const shift = QSA_PLANT == 9 && r0 > 0 ? 1 : 0;
    ref::expand(out, sortedIds, ctx, B, S, r0 - shift, r1 - shift);
    for (int32_t r = r0; r < r1 && QSA_PLANT != 0; ++r) {
        int32_t const b = r / S, t = r % S;
        int32_t* row = out + size_t(r) * W;
        bool const padded = t >= clampedCtx(ctx, b, S);
        if (QSA_PLANT == 2 && !padded && (t + 1) % 4 == 3) {
            int32_t const nVis = (t + 1) / 4, kSel = std::min(512, nVis);
            row[4 * kSel + 3] = 4 * nVis + 3;
        }
        if (QSA_PLANT == 3 && padded)
            std::memcpy(row, &before[size_t(r - r0) * W], W * sizeof(int32_t));
        if (QSA_PLANT == 5 && b > 0 && t >= clampedCtx(ctx, 0, S))
            std::fill(row, row + W, -1);
    }
}

inline size_t tailOffset(ref::PoolDims const& d, int32_t page, int32_t row, int32_t head) {
    return ((size_t(page) * 128 + row) * d.numKVHeads + head) * d.poolHeadDim + d.headSize;
}

// Plant 14 (pool hygiene; the CPU twin of kernel mutant 36, PAGE_UPPER_GUARD_MISSING): the raw-k tail
// scatter checks K ids only against the lower bound, so an id >= numPages (past the K plane) is written.
inline void upperGuardMissingScatter(uint16_t const* qk, int32_t const* ctx, int32_t B, int32_t S,
                                     ref::PoolView const& p) {
    for (int32_t b = 0; b < B; ++b) {
        int32_t const c = clampedCtx(ctx, b, S);
        for (int32_t t = c - c % 4; t < c; ++t) {
            int32_t const slot = t >> 7;
            if (slot >= p.dims.maxPagesPerSeq)
                continue;
            int32_t const page = p.pageTable[(size_t(b) * 2) * p.dims.maxPagesPerSeq + slot];
            if (page < p.dims.numPages) // the correct scatter has written [0, numPages) already
                continue;
            std::memcpy(p.pool + tailOffset(p.dims, page, t & 127, 0), qk + (size_t(b) * S + t) * ref::kQkWidth + 512,
                        128 * sizeof(uint16_t));
        }
    }
}

// Plant 7 (pool hygiene): the raw-k tail scatter also writes head numKVHeads - 1.
inline void afterRawKTailScatter(uint16_t const* qk, int32_t const* ctx, int32_t B, int32_t S, ref::PoolView const& p) {
    if (QSA_PLANT == 14)
        upperGuardMissingScatter(qk, ctx, B, S, p);
    if (QSA_PLANT != 7 || p.dims.numKVHeads < 2)
        return;
    for (int32_t b = 0; b < B; ++b) {
        int32_t const c = clampedCtx(ctx, b, S);
        for (int32_t t = c - c % 4; t < c; ++t) {
            int32_t const slot = t >> 7;
            if (slot >= p.dims.maxPagesPerSeq)
                continue;
            int32_t const page = p.pageTable[(size_t(b) * 2) * p.dims.maxPagesPerSeq + slot];
            if (page < 0 || page >= p.dims.numPages)
                continue;
            std::memcpy(p.pool + tailOffset(p.dims, page, t & 127, p.dims.numKVHeads - 1),
                        qk + (size_t(b) * S + t) * ref::kQkWidth + 512, 128 * sizeof(uint16_t));
        }
    }
}

// Plant 6 (prefill/decode): a completing decode step compresses K-tail row 4g + 1 in place of row 4g.
inline void beforeDecodePrep(int32_t const* ctx, int32_t B, int32_t maxBlocks, ref::PoolView const& p) {
    if (QSA_PLANT != 6)
        return;
    for (int32_t b = 0; b < B; ++b) {
        if (ctx[b] < 4 || ctx[b] % 4 != 0 || ctx[b] / 4 > maxBlocks)
            continue;
        int32_t const t = ctx[b] - 4, slot = t >> 7;
        if (slot >= p.dims.maxPagesPerSeq)
            continue;
        int32_t const page = p.pageTable[(size_t(b) * 2) * p.dims.maxPagesPerSeq + slot];
        if (page < 0 || page >= p.dims.numPages)
            continue;
        std::memcpy(p.pool + tailOffset(p.dims, page, t & 127, 0), p.pool + tailOffset(p.dims, page, (t + 1) & 127, 0),
                    128 * sizeof(uint16_t));
    }
}

// ---- plants seen only through the workspace read-back (contract section 6; Differential.*) ----------

// A copy of n elements at p when plant `which` is compiled in (the state a plant restores), else empty.
inline std::vector<uint16_t> snapshot(int which, uint16_t const* p, size_t n) {
    return QSA_PLANT == which ? std::vector<uint16_t>(p, p + n) : std::vector<uint16_t>{};
}

// Plant 12 (differential, K1a): qNormed rows t >= ctx are left unwritten instead of exact zeros (nothing
// downstream reads them: outIdx and the pool cannot show it).
inline void afterQPrep(uint16_t* qNormed, std::vector<uint16_t> const& before, int32_t const* ctx, int32_t B,
                       int32_t S) {
    if (QSA_PLANT != 12)
        return;
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t t = clampedCtx(ctx, b, S); t < S; ++t) {
            size_t const off = (size_t(b) * S + t) * 512;
            std::memcpy(qNormed + off, before.data() + off, 512 * sizeof(uint16_t));
        }
    }
}

// Plant 13 (differential, K1b): kbar of invalid blocks (4g + 3 >= ctx) is left unwritten instead of exact
// zeros (K2 never reads an invisible block).
inline void afterKCompress(uint16_t* kbar, std::vector<uint16_t> const& before, int32_t const* ctx, int32_t B,
                           int32_t S) {
    if (QSA_PLANT != 13)
        return;
    int32_t const MB = (S + 3) / 4;
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t g = clampedCtx(ctx, b, S) / 4; g < MB; ++g) {
            size_t const off = (size_t(b) * MB + g) * 128;
            std::memcpy(kbar + off, before.data() + off, 128 * sizeof(uint16_t));
        }
    }
}

// Plant 10 (differential, decode B1): the q rope of a valid row at pos = ctx instead of ctx - 1 (K-side
// numerics and pool writes stay right). Rows holding the batch's largest ctx keep pos = ctx - 1: cosSin
// row ctx may lie past the table's end (P >= max ctx is all the contract guarantees).
inline void afterDecodePrep(ref::DType dt, uint16_t* qNormed, uint16_t const* qk, float const* cosSin,
                            int32_t const* ctx, uint16_t const* wQ, float rmsEps, int32_t B, int32_t maxBlocks) {
    if (QSA_PLANT != 10)
        return;
    int32_t maxCtx = 0;
    for (int32_t b = 0; b < B; ++b)
        maxCtx = std::max(maxCtx, ctx[b]);
    int32_t const one = 1;
    for (int32_t b = 0; b < B; ++b) {
        if (!ref::decodeRowValid(ctx[b], maxBlocks) || ctx[b] >= maxCtx)
            continue;
        // K1a numerics of one row at t = 0 of a table that starts at row ctx: pos = ctx.
        ref::qPrep(dt, qNormed + size_t(b) * 512, qk + size_t(b) * ref::kQkWidth, cosSin + int64_t(ctx[b]) * 64, &one,
                   wQ, rmsEps, 1, 1);
    }
}

// Plant 11 (differential, decode B2): the four head terms summed in the order 3, 2, 1, 0 instead of 0, 1,
// 2, 3 (each dot as the contract says; only the rounding of the sum changes).
inline void decodeScores(ref::DType dt, float* logits, uint16_t const* qNormed, int32_t const* ctx,
                         ref::PoolView const& pool, int32_t B, int32_t maxBlocks) {
    if (QSA_PLANT != 11) {
        ref::decodeScores(dt, logits, qNormed, ctx, pool, B, maxBlocks);
        return;
    }
    std::vector<uint16_t> reversed(size_t(B) * 512);
    for (int32_t b = 0; b < B; ++b) {
        for (int h = 0; h < 4; ++h)
            std::memcpy(&reversed[size_t(b) * 512 + h * 128], qNormed + size_t(b) * 512 + (3 - h) * 128,
                        128 * sizeof(uint16_t));
    }
    ref::decodeScores(dt, logits, reversed.data(), ctx, pool, B, maxBlocks);
}

} // namespace plant
} // namespace prop
} // namespace qsa

// Random case builders for the reference's property tests. The shape (B, S, ctx, dtype, value mode, pool
// geometry) is drawn by the caller (RapidCheck); the bulk values come from testing/rng.h seeded by it.
#pragma once

#include "reference/numerics.h"
#include "reference/qsaReference.h"
#include "testing/rng.h"

#include <algorithm>
#include <vector>

namespace qsa {
namespace ref {
namespace test {

// The bulk values come from testing/rng.h (portable: a seed gives the same case with any standard library).
using Rng = testlib::Rng;

// Uniform in [-1, 1).
inline float unit(Rng& rng) {
    return static_cast<float>(static_cast<int32_t>(rng.next32())) * (1.0f / 2147483648.0f);
}
// Roughly bell-shaped, spread over a few binades: a sum of two uniforms times 1, 2 or 4.
inline float spread(Rng& rng) {
    float const u = unit(rng) + unit(rng);
    return u * static_cast<float>(1u << (rng.next32() % 3));
}

enum class ValueMode {
    kTies,    // values from {+1, -1, 0, +2}: many equal logits
    kNormal,  // N(0, 1) cast to T
    kSpecial, // N(0, 1) with ~2% raw 16-bit patterns (NaN, Inf, subnormals, -0) in real rows too
};

inline uint16_t randomValue(DType dt, ValueMode mode, Rng& rng) {
    switch (mode) {
    case ValueMode::kTies: {
        static float const alphabet[4] = {1.0f, -1.0f, 0.0f, 2.0f};
        return fromFloat(dt, alphabet[rng.next32() % 4]);
    }
    case ValueMode::kNormal:
        return fromFloat(dt, spread(rng));
    case ValueMode::kSpecial:
    default:
        if (rng.next32() % 50 == 0) {
            return static_cast<uint16_t>(rng.next32() & 0xFFFF);
        }
        return fromFloat(dt, spread(rng));
    }
}

inline PrefillCase randomPrefill(uint32_t seed, DType dt, int32_t batchSize, int32_t seqLen,
                                 std::vector<int32_t> const& ctx, ValueMode mode) {
    Rng rng(seed);
    PrefillCase c;
    c.dtype = dt;
    c.batchSize = batchSize;
    c.seqLen = seqLen;
    c.contextLengths = ctx;
    c.indexQk.resize(static_cast<size_t>(batchSize) * seqLen * kQkWidth);
    for (auto& v : c.indexQk) {
        v = randomValue(dt, mode, rng);
    }
    c.cosSin.resize(static_cast<size_t>(seqLen) * 64);
    for (auto& v : c.cosSin) {
        v = mode == ValueMode::kTies ? static_cast<float>(static_cast<int>(rng.next32() % 3) - 1) : unit(rng);
    }
    c.wQ.resize(128);
    c.wK.resize(128);
    for (int d = 0; d < 128; ++d) {
        c.wQ[d] = mode == ValueMode::kTies ? 0 : fromFloat(dt, 0.1f * unit(rng));
        c.wK[d] = mode == ValueMode::kTies ? 0 : fromFloat(dt, 0.1f * unit(rng));
    }
    static float const eps[5] = {1e-6f, 0.0f, 1.0f, 1e-40f, 3.5f};
    c.rmsEps = eps[rng.next32() % 5];
    return c;
}

// A pool for B sequences of up to maxTokens tokens: every sequence gets distinct K pages [0, numPages)
// and V pages [numPages, 2 numPages); with `holes`, some entries become -1 or out of their plane, and
// maxPagesPerSeq may be one short (slot overflow). Contents are random bits (the state before the run).
inline HostPool randomPool(uint32_t seed, int32_t batchSize, int32_t maxTokens, bool holes) {
    Rng rng(seed);
    HostPool p;
    int32_t const pagesNeeded = std::max(1, (maxTokens + 127) / 128);
    p.dims.maxPagesPerSeq = pagesNeeded + static_cast<int32_t>(rng.next32() % 2);
    if (holes && pagesNeeded > 1 && rng.next32() % 2) {
        p.dims.maxPagesPerSeq = pagesNeeded - 1;
    }
    p.dims.numPages = batchSize * p.dims.maxPagesPerSeq + static_cast<int32_t>(rng.next32() % 3);
    p.dims.numKVHeads = 1 + static_cast<int32_t>(rng.next32() % 2);
    p.dims.headSize = 1 + static_cast<int32_t>(rng.next32() % 8);
    p.dims.poolHeadDim = p.dims.headSize + 128 + static_cast<int32_t>(rng.next32() % 3);
    std::vector<int32_t> kIds(p.dims.numPages);
    for (int32_t i = 0; i < p.dims.numPages; ++i) {
        kIds[i] = i;
    }
    Rng shuffler(seed ^ 0x5A5A5A5Au);
    shuffler.shuffle(kIds.begin(), kIds.end());
    std::vector<int32_t> vIds = kIds;
    shuffler.shuffle(vIds.begin(), vIds.end());
    p.pageTable.resize(static_cast<size_t>(batchSize) * 2 * p.dims.maxPagesPerSeq);
    size_t next = 0;
    for (int32_t b = 0; b < batchSize; ++b) {
        for (int32_t s = 0; s < p.dims.maxPagesPerSeq; ++s) {
            int32_t k = kIds[next];
            int32_t v = vIds[next] + p.dims.numPages;
            ++next;
            if (holes) {
                switch (rng.next32() % 6) {
                case 0:
                    k = -1;
                    break;
                case 1:
                    v = -1;
                    break;
                case 2:
                    k = p.dims.numPages + static_cast<int32_t>(rng.next32() % 4);
                    break; // outside the K plane
                case 3:
                    v = static_cast<int32_t>(rng.next32() % p.dims.numPages);
                    break; // a K id in the V plane
                case 4:
                    v = 2 * p.dims.numPages + static_cast<int32_t>(rng.next32() % 3);
                    break; // past the V plane
                default:
                    break;
                }
            }
            p.pageTable[(static_cast<size_t>(b) * 2 + 0) * p.dims.maxPagesPerSeq + s] = k;
            p.pageTable[(static_cast<size_t>(b) * 2 + 1) * p.dims.maxPagesPerSeq + s] = v;
        }
    }
    p.data.resize(static_cast<size_t>(2) * p.dims.numPages * 128 * p.dims.numKVHeads * p.dims.poolHeadDim);
    for (auto& v : p.data) {
        v = static_cast<uint16_t>(rng.next32() & 0xFFFF);
    }
    return p;
}

} // namespace test
} // namespace ref
} // namespace qsa

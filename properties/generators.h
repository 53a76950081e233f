// RapidCheck generators of the properties. A generated value is a small SPEC (shape, context lengths,
// payload and tie modes, pool geometry, a seed) that prints as one readable line and shrinks towards
// small cases (B -> 1, S -> 1, ctx -> 0 or S, modes -> the plainest); the bulk data is derived from it
// deterministically by toCase(). Budgets keep typical cases small and a minority large (large ones only
// where the implementation is a GPU, see Budget).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "reference/qsaReference.h"

namespace qsa {
namespace prop {

using ref::DType;

enum class Payload { kNormal, kSubnormal, kHuge, kMixed };
// What makes logits tie: kDupBlocks repeats raw-k blocks (with an identity rope, so kbar rows repeat),
// kNegativeDots makes every dot negative (relu yields runs of exact +0.0), kQuantized draws from 5 values,
// kDeadGammaK sets every wK to -1 (kbar all zero, every logit +0.0).
enum class Ties { kNone, kDupBlocks, kNegativeDots, kQuantized, kDeadGammaK };
enum class Rope { kReal, kIdentity };

struct ActSpec {
    DType dtype = DType::kHalf;
    Payload payload = Payload::kNormal;
    Ties ties = Ties::kNone;
    int32_t distinctBlocks = 1; // kDupBlocks: how many different raw-k blocks repeat
    Rope rope = Rope::kReal;
    bool poisonPadding = false;     // padded rows of indexQk hold NaN / Inf / garbage
    bool extremeGamma = false;      // gammas include -1, -2, huge and subnormal values
    uint32_t epsBits = 0x358637BDu; // 1e-6f
    uint64_t seed = 0;
};

// Pool geometry and page-table shape. Pages are assigned per plane from a permutation (fragmented);
// holes (-1), out-of-plane ids and a too-short maxPagesPerSeq only where the property allows them.
struct PoolSpec {
    int32_t numKVHeads = 1;
    int32_t headSize = 256;
    int32_t poolHeadDim = 384;
    int32_t extraSlots = 0;  // maxPagesPerSeq beyond the pages a sequence needs
    int32_t extraPages = 0;  // numPages beyond B * maxPagesPerSeq
    int32_t holesPer16 = 0;  // chance (/16) that a table entry is -1
    bool outOfPlane = false; // some entries point outside their plane
    bool truncated = false;  // maxPagesPerSeq one less than needed (slot index >= maxPagesPerSeq)
    uint64_t seed = 0;
};

struct PrefillSpec {
    int32_t B = 1;
    int32_t S = 1;
    std::vector<int32_t> ctx;
    ActSpec act;
    bool hasPool = false;
    PoolSpec pool;
};

// Prefill of L[b] tokens with a pool, then `steps` decode steps (contract 6 and decode hygiene).
struct DecodeChainSpec {
    int32_t B = 1;
    std::vector<int32_t> L;
    int32_t steps = 1;
    ActSpec act;
    PoolSpec pool;
    bool splitCounters = true;
    int32_t extraBlocks = 0; // maxBlocks beyond ceilDiv(max(L) + steps, 4); -1: max(1, (max(L) + steps) / 4)
};

// Size limits of generated cases: pairs = B * S * ceilDiv(S, 4) bounds the K2 + sort work.
struct Budget {
    int64_t typicalPairs; // most cases
    int64_t largePairs;   // the minority of large cases
    int64_t maxRows;      // B * S
    int32_t largeWeight;  // weight of large S choices (out of ~100)
};
// The budget for where the implementation runs (GPU: chunk-crossing cases with S up to 8192).
Budget defaultBudget();

struct SpecOptions {
    bool pool = false;        // generate a pool (valid page table: no holes for pages in use)
    bool hostilePool = false; // also holes, out-of-plane ids, truncated tables
    bool tieBias = false;     // most cases tie-heavy
    bool allowPoison = true;  // NaN / Inf in padded rows
    Budget budget = defaultBudget();
};

// Choices that SHRINK towards their first entry (RapidCheck's element/weightedElement/weightedOneOf do not
// shrink at all), drawn uniformly by weight whatever the RapidCheck size.
rc::Gen<size_t> uniformIndex(size_t n);

template <typename T>
rc::Gen<T> weighted(std::vector<std::pair<size_t, T>> pairs) {
    size_t total = 0;
    for (auto const& p : pairs)
        total += p.first;
    return rc::gen::map(uniformIndex(total), [pairs](size_t k) {
        for (auto const& p : pairs) {
            if (k < p.first)
                return p.second;
            k -= p.first;
        }
        return pairs.back().second;
    });
}

template <typename T, typename... Ts>
rc::Gen<T> pick(T first, Ts... rest) {
    std::vector<std::pair<size_t, T>> pairs{{1, first}, {1, T(rest)}...};
    return weighted<T>(std::move(pairs));
}

template <typename T>
rc::Gen<T> pickOf(std::vector<T> const& v) {
    std::vector<std::pair<size_t, T>> pairs;
    for (T const& x : v)
        pairs.push_back({1, x});
    return weighted<T>(std::move(pairs));
}

// Weighted choice of generators; shrinks towards the first generator, then within the chosen one.
template <typename T>
rc::Gen<T> weightedGen(std::vector<std::pair<size_t, rc::Gen<T>>> pairs) {
    size_t total = 0;
    for (auto const& p : pairs)
        total += p.first;
    return rc::gen::mapcat(uniformIndex(total), [pairs](size_t k) {
        for (auto const& p : pairs) {
            if (k < p.first)
                return p.second;
            k -= p.first;
        }
        return pairs.back().second;
    });
}

rc::Gen<int32_t> genSeqLen(Budget const& b);
rc::Gen<std::vector<int32_t>> genContextLengths(int32_t B, int32_t S);
rc::Gen<ActSpec> genActSpec(bool tieBias, bool allowPoison);
rc::Gen<PoolSpec> genPoolSpec(bool hostile, int64_t tokensTotal);
// Large pools (tokensTotal > 16384) get one head and the narrowest tail geometry.
void fitPool(PoolSpec& p, int64_t tokensTotal);
rc::Gen<PrefillSpec> genPrefillSpec(SpecOptions const& o);
// minL/maxL bound the prefill lengths; steps in [1, maxSteps].
rc::Gen<DecodeChainSpec> genDecodeChainSpec(int32_t maxL, int32_t maxSteps, bool tieBias, bool hostile);

// Materialization (deterministic in the spec).
ref::PrefillCase toCase(PrefillSpec const& s);
ref::HostPool makePool(PoolSpec const& p, DType dt, int32_t B, int32_t tokensPerSeq);
// Row (b, t) of indexQk for token t of a sequence seeded by `seqSeed` (so a sequence can be rebuilt alone).
// Seed of sequence b's token rows (the same in every case built from one ActSpec).
uint64_t sequenceSeed(ActSpec const& a, int32_t b);
void fillTokenRow(ActSpec const& a, uint64_t seqSeed, int32_t t, uint16_t* row640);
std::vector<float> makeCosSin(Rope r, int32_t rows);
std::vector<uint16_t> makeGamma(ActSpec const& a, bool isK);
void poisonRow(DType dt, uint64_t seed, uint16_t* row640);

// Pool canary: a non-canonical NaN of T unique-ish per element (no cast ever produces it).
uint16_t canary(DType dt, size_t element);
bool isCanary(DType dt, size_t element, uint16_t v);

std::ostream& operator<<(std::ostream& os, ActSpec const& a);
std::ostream& operator<<(std::ostream& os, PoolSpec const& p);
std::ostream& operator<<(std::ostream& os, PrefillSpec const& s);
std::ostream& operator<<(std::ostream& os, DecodeChainSpec const& s);
std::string describe(PrefillSpec const& s);
std::string describe(DecodeChainSpec const& s);

} // namespace prop
} // namespace qsa

// RapidCheck generators of the properties. A generated value is a small SPEC (regime, shape, context
// lengths, payload and tie modes, pool geometry, a seed) that prints as one readable line and shrinks
// towards small cases; the bulk data is derived from it deterministically by toCase(). Regions are reached
// on purpose, by regime, in fixed shares (README "Regimes and coverage"; regimeGen, flatRange).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "properties/pool_cells.h"
#include "reference/qsaReference.h"

namespace qsa {
namespace prop {

using ref::DType;

// kTiny: bf16 magnitudes 2^-72..2^-56 (so s/128 of normRope is subnormal) or half's smallest subnormals,
// with a tiny rmsEps (0, subnormal, the least normal). kBits: uniformly random finite T bit patterns, every
// exponent at once, so that the FP32 sums of a block mean or of a sum of squares cancel and round
// differently in any other order (the K1b/B1 summation-order bugs). kCancel: every q head of every token is
// a permutation of one 128-value base vector (normal values), so all heads share the exact sum of squares
// s0, and rmsEps = -(s0 / 128) (1 - 2^-8): v = s/128 + rmsEps cancels to about 2^-8 of s/128, so one ulp of
// rounding in s (a reordered fma chain or butterfly, a missing fma) moves v by 2^-16 and shows in the
// T outputs of K1a and B1 (raw k stays normal).
enum class Payload { kNormal, kSubnormal, kHuge, kMixed, kTiny, kBits, kCancel };
// What makes logits tie: kDupBlocks repeats raw-k blocks (with an identity rope, so kbar rows repeat),
// kNegativeDots makes every dot negative (relu yields runs of exact +0.0), kQuantized draws from 5 values,
// kDeadGammaK sets every wK to -1 (kbar all zero, every logit +0.0).
enum class Ties { kNone, kDupBlocks, kNegativeDots, kQuantized, kDeadGammaK };
// kReal: theta 10000; kModel: theta 1e7 (the rope table of qwen4_exp); kIdentity: cos 1, sin 0.
enum class Rope { kReal, kIdentity, kModel };

// The region a case is built for. kSmall: S <= 520, readable. kPageEdge: S and ctx around multiples of 128
// (pages of the pool, page-table slots). kManyBlocks: a sequence with ctx >= 2052 (nVis > 512, so selection
// really selects), mostly with logits tied across ranks 512 and 513. kChunked: B*S > Rc (contract section 5)
// with a chunk boundary placed as ChunkAt says.
enum class Regime { kSmall, kPageEdge, kManyBlocks, kChunked };
// Where the chunked regime puts a chunk boundary (row k*Rc = (b, t)): at t = 0 of a later sequence, at
// t = ctx[b] - 1, inside b's padding (t >= ctx[b]), or at a 4-token block edge inside b's valid rows.
enum class ChunkAt { kNone, kSeqStart, kLastValid, kPadding, kBlockEdge };

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
    Regime regime = Regime::kSmall;
    ChunkAt chunkAt = ChunkAt::kNone;
    int32_t B = 1;
    int32_t S = 1;
    std::vector<int32_t> ctx;
    ActSpec act;
    bool hasPool = false;
    PoolSpec pool;
};

// Prefill of L[b] tokens with a pool, then `steps` decode steps (contract 6 and decode hygiene).
struct DecodeChainSpec {
    Regime regime = Regime::kSmall; // kSmall, kPageEdge (steps cross a page) or kManyBlocks (nVis > 512)
    int32_t B = 1;
    std::vector<int32_t> L;
    int32_t steps = 1;
    ActSpec act;
    PoolSpec pool;
    bool splitCounters = true;
    int32_t extraBlocks = 0; // maxBlocks beyond ceilDiv(max(L) + steps, 4); -1: max(1, (max(L) + steps) / 4)
};

inline int32_t ceilDiv(int64_t a, int64_t b) {
    return int32_t((a + b - 1) / b);
}

// Size limits of generated cases: pairs = B * S * ceilDiv(S, 4) bounds the K2 + sort work.
struct Budget {
    int64_t typicalPairs; // most cases
    int64_t largePairs;   // the minority of large cases
    int64_t maxRows;      // B * S
};
// The budget for where the implementation runs (GPU: chunk-crossing cases with S up to 8192).
Budget defaultBudget();

// Shares of the regimes in percent, in steps of 5 (regimeGen's period is 20 sizes); kSmall gets the rest.
struct RegimeShares {
    int manyBlocks = 0;
    int chunked = 0;
    int pageEdge = 0;
};
// The shares for where the implementation runs: nVis > 512 in 30% (GPU) / 15% (CPU) of the cases (floors
// 20% / 10%), page edges 15%, chunked 15% where `chunked` (floor 10%; on the CPU only the properties that
// claim it pay for it), else 10% on the GPU and none on the CPU.
RegimeShares defaultShares(bool chunked);

struct SpecOptions {
    bool pool = false;        // generate a pool (valid page table: no holes for pages in use)
    bool hostilePool = false; // also holes, out-of-plane ids, truncated tables
    bool tieBias = false;     // most cases tie-heavy
    bool allowPoison = true;  // NaN / Inf in padded rows
    Budget budget = defaultBudget();
    RegimeShares shares = defaultShares(false);
};

// The regime of a case from its RapidCheck size: RapidCheck gives the i-th of n cases the size
// i * 100 / (n - 1) (every size 0..100 once per 101 cases when n > 100), so a table over size % 20 takes
// each regime in its share of the cases within a few percent at any budget, deterministically (the
// coverage floors cannot flake), and reproduce= (which restores the size) rebuilds the same regime.
// Shrinks towards kSmall.
rc::Gen<Regime> regimeGen(RegimeShares const& s);
// True in `pct` percent of the cases (a multiple of 5), deterministically by RapidCheck size like regimeGen:
// on the slots firstSlot .. firstSlot + pct / 5 - 1 of regimeGen's period order, so that a share starting
// at slot 10 falls on slots the regimes at their default shares leave to kSmall on the CPU. For a region
// with a coverage floor that a random draw would miss now and then (a floor that flakes is no floor).
// Shrinks towards false.
rc::Gen<bool> sizeShare(int pct, int firstSlot);

// Choices that SHRINK towards their first entry (RapidCheck's element/weightedElement/weightedOneOf do not
// shrink at all), drawn uniformly by weight whatever the RapidCheck size.
rc::Gen<size_t> uniformIndex(size_t n);

// The sum of the weights of a weighted list.
template <typename T>
size_t totalWeight(std::vector<std::pair<size_t, T>> const& pairs) {
    size_t total = 0;
    for (auto const& p : pairs)
        total += p.first;
    return total;
}

// The entry that k in [0, totalWeight) falls on, the weights taken in list order (past the end: the last).
template <typename T>
T const& atWeight(std::vector<std::pair<size_t, T>> const& pairs, size_t k) {
    for (auto const& p : pairs) {
        if (k < p.first)
            return p.second;
        k -= p.first;
    }
    return pairs.back().second;
}

template <typename T>
rc::Gen<T> weighted(std::vector<std::pair<size_t, T>> pairs) {
    return rc::gen::map(uniformIndex(totalWeight(pairs)), [pairs](size_t k) { return atWeight(pairs, k); });
}

// A value in [lo, hi) drawn uniformly WHATEVER the RapidCheck size (unlike rc::gen::inRange), shrinking
// towards lo.
template <typename T>
rc::Gen<T> flatRange(T lo, T hi) {
    return rc::gen::map(uniformIndex(size_t(std::max<int64_t>(1, int64_t(hi) - int64_t(lo)))),
                        [lo](size_t k) { return T(int64_t(lo) + int64_t(k)); });
}

// Every entry of v with weight 1.
template <typename T>
std::vector<std::pair<size_t, T>> evenly(std::vector<T> const& v) {
    std::vector<std::pair<size_t, T>> r;
    for (T const& x : v)
        r.push_back({1, x});
    return r;
}

template <typename T>
rc::Gen<T> pickOf(std::vector<T> const& v) {
    return weighted<T>(evenly(v));
}

template <typename T, typename... Ts>
rc::Gen<T> pick(T first, Ts... rest) {
    return pickOf<T>({first, T(rest)...});
}

// Weighted choice of generators; shrinks towards the first generator, then within the chosen one.
template <typename T>
rc::Gen<T> weightedGen(std::vector<std::pair<size_t, rc::Gen<T>>> pairs) {
    return rc::gen::mapcat(uniformIndex(totalWeight(pairs)), [pairs](size_t k) { return atWeight(pairs, k); });
}

rc::Gen<ActSpec> genActSpec(bool tieBias, bool allowPoison);
// Turns a into a kCancel payload: its rmsEps cancels the shared sum of squares (see Payload), and kQuantized
// ties become kNone (their squares sum exactly in every order).
void makeCancel(ActSpec& a);
rc::Gen<PoolSpec> genPoolSpec(bool hostile, int64_t tokensTotal);
// Large pools (tokensTotal > 16384) get one head and the narrowest tail geometry.
void fitPool(PoolSpec& p, int64_t tokensTotal);
rc::Gen<PrefillSpec> genPrefillSpec(SpecOptions const& o);
// maxL bounds the prefill lengths of the small regime; the page-edge regime puts L next to a multiple of
// 128 and the nVis > 512 regime in [2043, 2060] (GPU: up to 4200), in `shares` (their chunked share is
// ignored); steps in [1, maxSteps].
rc::Gen<DecodeChainSpec> genDecodeChainSpec(int32_t maxL, int32_t maxSteps, bool tieBias, bool hostile,
                                            RegimeShares const& shares = defaultShares(false));

// Materialization (deterministic in the spec).
ref::PrefillCase toCase(PrefillSpec const& s);
ref::HostPool makePool(PoolSpec const& p, DType dt, int32_t B, int32_t tokensPerSeq);
// Seed of sequence b's token rows (the same in every case built from one ActSpec); row (b, t) of indexQk
// for token t of a sequence seeded by `seqSeed` (so a sequence can be rebuilt alone).
uint64_t sequenceSeed(ActSpec const& a, int32_t b);
void fillTokenRow(ActSpec const& a, uint64_t seqSeed, int32_t t, uint16_t* row640);
std::vector<float> makeCosSin(Rope r, int32_t rows);
std::vector<uint16_t> makeGamma(ActSpec const& a, bool isK);
// A case's inputs from `a` besides its rows: the rope table of `ropeRows` rows, the gammas and rmsEps.
template <typename Case>
void setActInputs(Case& c, ActSpec const& a, int32_t ropeRows) {
    c.cosSin = makeCosSin(a.rope, ropeRows);
    c.wQ = makeGamma(a, false);
    c.wK = makeGamma(a, true);
    std::memcpy(&c.rmsEps, &a.epsBits, 4);
}
void poisonRow(DType dt, uint64_t seed, uint16_t* row640);

// Pool canaries: canary in pool_cells.h.

std::ostream& operator<<(std::ostream& os, ActSpec const& a);
std::ostream& operator<<(std::ostream& os, PoolSpec const& p);
std::ostream& operator<<(std::ostream& os, PrefillSpec const& s);
std::ostream& operator<<(std::ostream& os, DecodeChainSpec const& s);
// The one-line description of a spec (its operator<<).
template <typename Spec>
std::string describe(Spec const& s) {
    std::ostringstream os;
    os << s;
    return os.str();
}

} // namespace prop
} // namespace qsa

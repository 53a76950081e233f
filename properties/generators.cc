// Generators and materialization of the property cases (see generators.h).
#include "properties/generators.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <numeric>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "properties/harness.h"
#include "reference/numerics.h"
#include "testing/inputs.h"
#include "testing/rng.h"

namespace qsa {
namespace prop {
namespace {

using testlib::mix;

uint16_t subnormalT(DType dt, uint64_t r) {
    uint16_t const sign = (r >> 40) & 1 ? 0x8000 : 0;
    return dt == DType::kHalf ? uint16_t(sign | (1 + r % 0x3FF)) : uint16_t(sign | (1 + r % 0x7F));
}

uint16_t hugeT(DType dt, uint64_t r) {
    uint16_t const sign = (r >> 40) & 1 ? 0x8000 : 0;
    if (r % 16 == 0)
        return uint16_t(sign | (dt == DType::kHalf ? 0x7C00 : 0x7F80)); // inf
    if (dt == DType::kHalf)
        return uint16_t(sign | (0x7800 + r % 0x400));
    // bf16: 2^56..2^127, so that the sum of squares is finite, near FLT_MAX, or overflows.
    return uint16_t(sign | ((127 + 56 + uint32_t((r >> 8) % 72)) << 7) | ((r >> 16) & 0x7F));
}

// Tiny magnitudes: bf16 with a random mantissa and exponents in [top - 16, top], top in [-80, -56] per case,
// so that in a share of the cases every square is an FP32 subnormal and the sum of squares s (and s/128)
// keeps only a few significant bits: its rounding then depends on the order of the fma chain, and a
// reordered chain changes normRope's output (the tiny-sum / tiny-rmsEps bugs); half's smallest subnormals
// (1..16 units of 2^-24).
uint16_t tinyT(DType dt, uint64_t r, int top) {
    uint16_t const sign = (r >> 40) & 1 ? 0x8000 : 0;
    if (dt == DType::kHalf)
        return uint16_t(sign | (1 + r % 16));
    uint32_t const e = uint32_t(127 + top - int((r >> 8) % 17));
    return uint16_t(sign | (e << 7) | ((r >> 16) & 0x7F));
}

float unit(uint64_t r) {
    return float(r >> 40) / float(1ull << 24);
} // [0, 1)

uint16_t payloadValue(ActSpec const& a, uint64_t r, int sign) {
    DType const dt = a.dtype;
    Payload p = a.payload;
    if (p == Payload::kMixed) {
        uint64_t const k = r % 100;
        if (k < 70)
            p = Payload::kNormal;
        else if (k < 80)
            p = Payload::kSubnormal;
        else if (k < 88)
            p = Payload::kHuge;
        else if (k < 94)
            return sign < 0 ? 0x8000 : 0x0000; // +-0
        else if (k < 97)
            return 0x8000; // -0 in either sign mode
        else
            return 0x7FFF; // the canonical NaN only (canaries stay unique)
        r = mix(r);
    }
    uint16_t v;
    if (a.ties == Ties::kQuantized) {
        v = ref::fromFloat(dt, 0.5f * float(int(r % 5) - 2));
    } else if (p == Payload::kSubnormal) {
        v = subnormalT(dt, r);
    } else if (p == Payload::kTiny) {
        v = tinyT(dt, r, -56 - int(a.seed % 25));
    } else if (p == Payload::kBits) {
        v = uint16_t(r >> 24);
        int const shift = dt == DType::kHalf ? 10 : 7;
        uint16_t const expMask = dt == DType::kHalf ? 0x1F : 0xFF;
        if (((v >> shift) & expMask) == expMask)
            v = uint16_t(v & ~(1u << shift)); // finite: the largest exponent becomes the one below

    } else if (p == Payload::kHuge) {
        v = hugeT(dt, r);
    } else {
        v = ref::fromFloat(dt, 4.0f * unit(r) - 2.0f);
    }
    if (sign > 0)
        v &= 0x7FFF;
    if (sign < 0 && (v & 0x7FFF) != 0 && (v & 0x7FFF) < (dt == DType::kHalf ? 0x7C01 : 0x7F81))
        v |= 0x8000;
    return v;
}

// The printed names of the modes, in the order their enums declare them (generators.h).
constexpr char const* kPayloadNames[] = {"normal", "subnormal", "huge", "mixed", "tiny", "bits", "cancel"};
static_assert(std::size(kPayloadNames) == size_t(Payload::kCancel) + 1, "one name per Payload");
constexpr char const* kTiesNames[] = {"none", "dup-raw-k-blocks", "negative-dots(relu->+0.0; every 3rd block k=+0)",
                                      "quantized{-1,-.5,0,.5,1}", "wK=-1(all logits +0.0)"};
static_assert(std::size(kTiesNames) == size_t(Ties::kDeadGammaK) + 1, "one name per Ties");
constexpr char const* kRegimeNames[] = {"small", "page-edge", "nVis>512", "chunked"};
static_assert(std::size(kRegimeNames) == size_t(Regime::kChunked) + 1, "one name per Regime");
constexpr char const* kChunkAtNames[] = {"none", "t=0", "t=ctx-1", "in-padding", "block-edge"};
static_assert(std::size(kChunkAtNames) == size_t(ChunkAt::kBlockEdge) + 1, "one name per ChunkAt");

template <typename E, size_t N>
char const* nameIn(char const* const (&names)[N], E e) {
    size_t const i = size_t(e);
    return i < N ? names[i] : "?";
}

void printVec(std::ostream& os, std::vector<int32_t> const& v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i)
        os << (i ? "," : "") << v[i];
    os << "]";
}

// kCancel's base vector: value d of the 128 (normal payload, the sign left to the caller).
uint16_t cancelBase(ActSpec const& a, int d, int sign) {
    ActSpec n = a;
    n.payload = Payload::kNormal;
    return payloadValue(n, mix(mix(a.seed ^ 0xCA4Cull) + uint64_t(d)), sign);
}

// S of the small regime, in one weighted list sorted by S (shrinking walks towards the smallest S).
std::vector<std::pair<size_t, int32_t>> smallSeqLens() {
    std::map<int32_t, size_t> w;
    for (int32_t S = 1; S <= 32; ++S)
        w[S] += 16;
    for (int32_t S : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 31, 32, 33})
        w[S] += 10;
    for (int32_t S = 33; S <= 520; S += 7)
        w[S] += 2;
    std::vector<std::pair<size_t, int32_t>> v;
    for (auto const& [S, weight] : w)
        v.push_back({weight, S});
    return v;
}

// A fraction in [0, 65536) picks from a weighted list (sorted, smallest first): shrinking the fraction
// towards 0 walks towards the first entry.
template <typename T>
T atFraction(std::vector<std::pair<size_t, T>> const& v, uint32_t frac) {
    return atWeight(v, size_t((uint64_t(frac) * totalWeight(v)) >> 16));
}

rc::Gen<uint32_t> fraction() {
    return flatRange<uint32_t>(0, 1u << 16);
}

// A context length relative to S, so that it survives shrinking S (picks after a shrunk pick are drawn anew
// in RapidCheck's gen::exec; these are drawn before S).
struct CtxKind {
    int kind = 0; // 0 full, 1 fraction, 2 zero, 3 one, 4 near a multiple of m
    int32_t m = 4, k = 0, d = 0;
    uint32_t frac = 0;
    int32_t at(int32_t S) const {
        switch (kind) {
        case 0:
            return S;
        case 1:
            return int32_t(uint64_t(frac) * uint64_t(S + 1) >> 16);
        case 2:
            return 0;
        case 3:
            return std::min(1, S);
        default:
            return std::min(std::max((k % (S / m + 1)) * m + d, 0), S);
        }
    }
};

rc::Gen<CtxKind> genCtxKind() {
    return rc::gen::exec([] {
        CtxKind c;
        c.kind = *weighted<int>({{4, 0}, {4, 1}, {1, 2}, {1, 3}, {4, 4}});
        if (c.kind == 1)
            c.frac = *fraction();
        if (c.kind == 4) {
            c.m = *pick<int32_t>(4, 128, 2048);
            c.k = *flatRange<int32_t>(0, 1 << 16);
            c.d = *pick<int32_t>(0, -1, 1);
        }
        return c;
    });
}

// The ties of the nVis > 512 regime: repeated kbar rows (logit groups of ~nVis/d equal values, the last
// group spans ranks 512 and 513), all logits +0.0, or distinct logits (a quarter, with a real rope).
void manyBlocksTies(ActSpec& a, uint32_t frac) {
    int const k = int((uint64_t(frac) * 20) >> 16);
    if (k < 5) {
        a.ties = Ties::kNone;
        return;
    }
    if (k < 13) {
        a.ties = Ties::kDupBlocks;
        a.distinctBlocks = 1 + (k - 5) % 4;
    } else if (k < 17) {
        a.ties = Ties::kNegativeDots;
    } else {
        a.ties = Ties::kDeadGammaK;
    }
    if (a.ties != Ties::kDeadGammaK) {
        a.rope = Rope::kIdentity;
        a.extremeGamma = false;
    }
}

// The chunked geometries (B, S) whose first boundary row Rc falls where `at` asks. The CPU takes the first, the
// cheapest: the sort of B*S*MB >= 8388608 entries and the B*S output rows dominate, so B*S stays near its minimum
// (~5800 rows) and the boundary sequence has few valid rows before the boundary (K2 reads visible entries
// only). Boundary rows: (3, 4096) -> (2, 0); (2, 5781) -> (1, 20); (1, 5793) -> (0, 5789).
struct ChunkGeometry {
    int32_t B, S;
};
std::vector<ChunkGeometry> chunkGeometries(ChunkAt at) {
    switch (at) {
    case ChunkAt::kSeqStart: // Rc a multiple of S: the boundary row is (Rc / S, 0)
        return {{3, 4096}, {9, 2048}, {33, 1024}, {2, 8192}};
    case ChunkAt::kBlockEdge: // boundary at a small t with t % 4 == 0: (1, 20), (32, 64), (33, 24), (21, 44)
        return {{2, 5781}, {33, 1022}, {34, 1008}, {22, 1262}};
    case ChunkAt::kLastValid: // (1, 20), (21, 1233), (8, 1927), (4, 2585); the GPU also (0, 5789)
        return {{2, 5781}, {22, 1234}, {9, 1930}, {5, 2590}, {1, 5793}};
    default: // in padding: (0, 5789), (21, 1233), (8, 1927), (4, 2585)
        return {{1, 5793}, {22, 1234}, {9, 1930}, {5, 2590}};
    }
}

// The chunked regime: geometry, then context lengths that put the first boundary row where `at` says. On
// the CPU the other sequences hold at most 64 valid rows (K2 work stays small); on the GPU they keep their
// drawn kinds.
void makeChunked(PrefillSpec& s, ChunkAt at, uint32_t geoFrac, uint32_t ctxFrac, std::vector<CtxKind> const& kinds) {
    std::vector<ChunkGeometry> geos = chunkGeometries(at);
    if (!implOnGpu())
        geos.resize(1);
    ChunkGeometry const g = atFraction(evenly(geos), geoFrac);
    s.B = g.B;
    s.S = g.S;
    s.chunkAt = at;
    int64_t const rc = ref::prefillChunkRows(s.B, s.S);
    int32_t const bb = int32_t(rc / s.S), t = int32_t(rc % s.S);
    s.ctx.assign(size_t(s.B), 0);
    for (int32_t b = 0; b < s.B; ++b) {
        int32_t const c = kinds[size_t(b) % kinds.size()].at(s.S);
        s.ctx[b] = implOnGpu() ? c : std::min(c, int32_t(c % 65));
    }
    int32_t const spare = int32_t((uint64_t(ctxFrac) * 64) >> 16); // 0..63
    switch (at) {
    case ChunkAt::kSeqStart:
        s.ctx[bb] = std::min(s.S, 1 + spare); // the boundary is this sequence's first row
        break;
    case ChunkAt::kLastValid:
        s.ctx[bb] = t + 1;
        break;
    case ChunkAt::kPadding:
        s.ctx[bb] = std::max(0, t - 1 - spare);
        break;
    default:
        s.ctx[bb] = std::min(s.S, t + 1 + spare);
        break;
    }
}

} // namespace

rc::Gen<size_t> uniformIndex(size_t n) {
    return rc::Gen<size_t>([n](rc::Random const& random, int) {
        size_t const v = size_t(rc::Random(random).next() % n);
        return rc::shrinkable::shrinkRecur(v, [](size_t x) { return rc::shrink::towards<size_t>(x, 0); });
    });
}

Budget defaultBudget() {
    // QSA_PROP_BUDGET=sanitizer (tools/run_all.sh --sanitize): the CPU-sized budget on any implementation,
    // so that a property binary finishes under compute-sanitizer.
    char const* env = std::getenv("QSA_PROP_BUDGET");
    bool const sanitizer = env != nullptr && std::string(env) == "sanitizer";
    if (implOnGpu() && !sanitizer)
        return Budget{1 << 21, int64_t(1) << 26, 32768};
    return Budget{1 << 15, int64_t(1) << 20, 8192};
}

uint64_t sequenceSeed(ActSpec const& a, int32_t b) {
    return mix(a.seed + uint64_t(b) * 0x1000193);
}

void fillTokenRow(ActSpec const& a, uint64_t seqSeed, int32_t t, uint16_t* row) {
    int const qSign = a.ties == Ties::kNegativeDots ? 1 : 0;
    int const kSign = a.ties == Ties::kNegativeDots ? -1 : 0;
    uint64_t const qs = mix(seqSeed ^ (uint64_t(t) << 20) ^ 0x51);
    for (int i = 0; i < 512; ++i)
        row[i] = payloadValue(a, mix(qs + i), qSign);
    if (a.payload == Payload::kCancel) { // each head a permutation d -> (d * stride + offset) mod 128 of the base
        for (int h = 0; h < 4; ++h) {
            uint64_t const r = mix(qs ^ (uint64_t(h) << 8) ^ 0xC7);
            int const stride = 2 * int(r % 64) + 1, offset = int((r >> 8) % 128);
            for (int d = 0; d < 128; ++d)
                row[128 * h + d] = cancelBase(a, (d * stride + offset) % 128, qSign);
        }
    }
    // kDupBlocks: the 4-token block of t is one of distinctBlocks templates (same for all sequences).
    uint64_t const ks = a.ties == Ties::kDupBlocks
                            ? mix(a.seed ^ (uint64_t((t / 4) % std::max(1, a.distinctBlocks)) << 8) ^ uint64_t(t % 4))
                            : mix(seqSeed ^ (uint64_t(t) << 20) ^ 0x4B);
    for (int i = 0; i < 128; ++i)
        row[512 + i] = payloadValue(a, mix(ks + i), kSign);
    // kNegativeDots: every third block has raw k exactly +0.0, so its dots are +0.0 while the others' are
    // negative: relu must give +0.0 for both, else -0.0 and +0.0 meet at B3's selection threshold.
    if (a.ties == Ties::kNegativeDots && (t / 4) % 3 == 0)
        std::fill(row + 512, row + 640, uint16_t(0));
}

void poisonRow(DType dt, uint64_t seed, uint16_t* row) {
    uint16_t const inf = dt == DType::kHalf ? 0x7C00 : 0x7F80;
    uint16_t const choices[6] = {0x7FFF, 0xFFFF, inf, uint16_t(inf | 0x8000), uint16_t(inf | 1), 0};
    for (int i = 0; i < 640; ++i) {
        uint64_t const r = mix(seed + i);
        row[i] = r % 7 < 6 ? choices[r % 7] : uint16_t(r >> 20);
    }
}

std::vector<float> makeCosSin(Rope r, int32_t rows) {
    int32_t const n = std::max(rows, 1);
    return r == Rope::kIdentity ? testlib::identityRope(n) : testlib::ropeTable(r == Rope::kModel ? 1e7 : 10000.0, n);
}

std::vector<uint16_t> makeGamma(ActSpec const& a, bool isK) {
    std::vector<uint16_t> w(128);
    uint64_t const s = mix(a.seed ^ (isK ? 0x6B : 0x71));
    for (int d = 0; d < 128; ++d) {
        uint64_t const r = mix(s + d);
        float v = unit(r) - 0.5f;
        if (isK && a.ties == Ties::kDeadGammaK)
            v = -1.0f;
        if (a.extremeGamma) {
            float const extremes[6] = {-1.0f, -2.0f, 0.0f, a.dtype == DType::kHalf ? 60000.0f : 1e30f, 1e-7f, 3.0f};
            if (r % 3 == 0)
                v = extremes[(r >> 8) % 6];
        }
        w[d] = ref::fromFloat(a.dtype, v);
    }
    return w;
}

ref::HostPool makePool(PoolSpec const& p, DType dt, int32_t B, int32_t tokensPerSeq) {
    ref::HostPool h;
    int32_t const needed = std::max(1, ceilDiv(tokensPerSeq, 128));
    ref::PoolDims& d = h.dims;
    d.maxPagesPerSeq = p.truncated ? std::max(1, needed - 1) : needed + p.extraSlots;
    d.numPages = B * d.maxPagesPerSeq + p.extraPages;
    d.numKVHeads = p.numKVHeads;
    d.poolHeadDim = p.poolHeadDim;
    d.headSize = p.headSize;
    testlib::Rng rng(mix(p.seed ^ 0x9A)); // portable: a seed gives the same table with any standard library
    std::vector<int32_t> kIds(d.numPages), vIds(d.numPages);
    std::iota(kIds.begin(), kIds.end(), 0);
    std::iota(vIds.begin(), vIds.end(), d.numPages);
    rng.shuffle(kIds.begin(), kIds.end());
    rng.shuffle(vIds.begin(), vIds.end());
    h.pageTable.assign(size_t(B) * 2 * d.maxPagesPerSeq, -1);
    // Out-of-plane ids past both planes are drawn consecutively from 2*numPages (unique per plane), so the
    // harness's guard pages (properties/harness.cc, up to the table's highest id) cover every one of them.
    int32_t pastBoth[2] = {2 * d.numPages, 2 * d.numPages};
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t s = 0; s < d.maxPagesPerSeq; ++s) {
            size_t const i = size_t(b) * d.maxPagesPerSeq + s;
            for (int plane = 0; plane < 2; ++plane) {
                int32_t id = plane == 0 ? kIds[i] : vIds[i];
                uint64_t const r = rng.next();
                if (int32_t(r % 16) < p.holesPer16)
                    id = -1;
                // Out of plane, still unique per plane: K ids beyond both planes (upper bound), V ids inside
                // the K plane (lower bound) or, one time in two, beyond both planes (upper bound).
                else if (p.outOfPlane && (r >> 8) % 6 == 0)
                    id = plane == 0 || (r >> 16) % 2 == 0 ? pastBoth[plane]++ : kIds[i];
                h.pageTable[(size_t(b) * 2 + plane) * d.maxPagesPerSeq + s] = id;
            }
        }
    }
    h.data.resize(size_t(2) * d.numPages * 128 * d.numKVHeads * d.poolHeadDim);
    for (size_t e = 0; e < h.data.size(); ++e)
        h.data[e] = canary(dt, e);
    return h;
}

ref::PrefillCase toCase(PrefillSpec const& s) {
    ref::PrefillCase c;
    c.dtype = s.act.dtype;
    c.batchSize = s.B;
    c.seqLen = s.S;
    c.contextLengths = s.ctx;
    c.indexQk.resize(size_t(s.B) * s.S * 640);
    for (int32_t b = 0; b < s.B; ++b) {
        uint64_t const seqSeed = sequenceSeed(s.act, b);
        for (int32_t t = 0; t < s.S; ++t) {
            uint16_t* row = &c.indexQk[(size_t(b) * s.S + t) * 640];
            if (s.act.poisonPadding && t >= s.ctx[b]) {
                poisonRow(s.act.dtype, mix(seqSeed ^ uint64_t(t)), row);
            } else {
                fillTokenRow(s.act, seqSeed, t, row);
            }
        }
    }
    setActInputs(c, s.act, s.S);
    c.hasPool = s.hasPool;
    if (s.hasPool)
        c.pool = makePool(s.pool, s.act.dtype, s.B, s.S);
    return c;
}

// ---- generators -----------------------------------------------------------------------------------

RegimeShares defaultShares(bool chunked) {
    RegimeShares s;
    s.manyBlocks = implOnGpu() ? 30 : 15;
    s.pageEdge = 15;
    s.chunked = chunked ? 15 : (implOnGpu() ? 10 : 0);
    return s;
}

namespace {
// Slots of the 20-size period in an order that spreads each share over the period (bit-reversal-like),
// so that the evenly spread sizes of a run of any length land in every share's slots alike.
constexpr int kSlotOrder[20] = {0, 10, 5, 15, 2, 12, 7, 17, 4, 14, 9, 19, 1, 11, 6, 16, 3, 13, 8, 18};

// The value a case takes from its RapidCheck size: table[size % 20]; shrinks towards `towards`.
template <typename T>
rc::Gen<T> bySize(std::array<T, 20> const& table, T towards) {
    return rc::Gen<T>([table, towards](rc::Random const&, int size) {
        T const v = table[size_t(std::max(size, 0)) % 20];
        return rc::shrinkable::shrinkRecur(
            v, [towards](T x) { return x == towards ? rc::Seq<T>() : rc::seq::just(towards); });
    });
}
} // namespace

rc::Gen<Regime> regimeGen(RegimeShares const& s) {
    std::array<Regime, 20> table;
    table.fill(Regime::kSmall);
    int next = 0;
    auto assign = [&](int pct, Regime r) {
        for (int i = 0; i < pct / 5 && next < 20; ++i)
            table[size_t(kSlotOrder[next++])] = r;
    };
    assign(s.manyBlocks, Regime::kManyBlocks);
    assign(s.chunked, Regime::kChunked);
    assign(s.pageEdge, Regime::kPageEdge);
    return bySize(table, Regime::kSmall);
}

rc::Gen<bool> sizeShare(int pct, int firstSlot) {
    if (pct < 0 || pct > 100 || pct % 5 != 0 || firstSlot < 0 || firstSlot + pct / 5 > 20)
        throw std::runtime_error("sizeShare: pct " + std::to_string(pct) +
                                 " must be a multiple of 5 in [0, 100] and "
                                 "firstSlot " +
                                 std::to_string(firstSlot) + " + pct / 5 at most 20");
    std::array<bool, 20> table{};
    for (int i = firstSlot; i < firstSlot + pct / 5; ++i)
        table[size_t(kSlotOrder[i])] = true;
    return bySize(table, false);
}

void makeCancel(ActSpec& a) {
    a.payload = Payload::kCancel;
    if (a.ties == Ties::kQuantized)
        a.ties = Ties::kNone; // squares of {0, 0.5, 1} sum exactly in any order: nothing to amplify
    double s0 = 0.0;          // the sum of squares every q head shares (in double: exact for these magnitudes)
    for (int d = 0; d < 128; ++d) {
        uint16_t const v = cancelBase(a, d, 0);
        float const x = ref::toFloat(a.dtype, v);
        s0 += double(x) * double(x);
    }
    float const eps = -float(s0 / 128.0 * (1.0 - 1.0 / 256.0));
    std::memcpy(&a.epsBits, &eps, 4);
}

rc::Gen<ActSpec> genActSpec(bool tieBias, bool allowPoison) {
    return rc::gen::exec([tieBias, allowPoison] {
        ActSpec a;
        a.dtype = *pick(DType::kHalf, DType::kBf16);
        a.payload = *weighted<Payload>({{4, Payload::kNormal},
                                        {1, Payload::kSubnormal},
                                        {1, Payload::kHuge},
                                        {2, Payload::kMixed},
                                        {2, Payload::kTiny},
                                        {2, Payload::kBits},
                                        {2, Payload::kCancel}});
        uint32_t const tieWeight = tieBias ? 6 : 1;
        a.ties = *weighted<Ties>({{tieBias ? 2u : 6u, Ties::kNone},
                                  {tieWeight, Ties::kDupBlocks},
                                  {tieWeight, Ties::kNegativeDots},
                                  {tieWeight, Ties::kQuantized},
                                  {1, Ties::kDeadGammaK}});
        a.distinctBlocks = a.ties == Ties::kDupBlocks ? *flatRange<int32_t>(1, 5) : 1;
        bool const tiesNeedIdentity = a.ties == Ties::kDupBlocks || a.ties == Ties::kNegativeDots;
        a.rope = tiesNeedIdentity ? Rope::kIdentity
                                  : *weighted<Rope>({{2, Rope::kReal}, {2, Rope::kModel}, {1, Rope::kIdentity}});
        a.poisonPadding = allowPoison && *weighted<bool>({{1, false}, {2, true}});
        a.extremeGamma = !tiesNeedIdentity && *weighted<bool>({{5, false}, {1, true}});
        if (a.payload == Payload::kTiny) {
            // rmsEps 1e-6 would dominate s/128: tiny eps (0, the least subnormal, subnormals, least normal).
            a.epsBits = *weighted<uint32_t>(
                {{2, 0u}, {2, 1u}, {1, 0x00000400u}, {2, 0x00400000u}, {1, 0x00800000u}, {1, 0x358637BDu}});
        } else {
            a.epsBits = *weighted<uint32_t>(
                {{8, 0x358637BDu}, {1, 0u}, {1, 0x3727C5ACu}, {1, 0x3F800000u}, {1, 0xB58637BDu}, {1, 1u}});
        }
        a.seed = *rc::gen::arbitrary<uint32_t>();
        if (a.payload == Payload::kCancel)
            makeCancel(a);
        return a;
    });
}

void fitPool(PoolSpec& p, int64_t tokensTotal) {
    if (tokensTotal <= 16384)
        return;
    p.numKVHeads = 1; // keep large pools small: one head, the narrowest tail geometry
    p.headSize = 1;
    p.poolHeadDim = 129;
}

rc::Gen<PoolSpec> genPoolSpec(bool hostile, int64_t tokensTotal) {
    return rc::gen::exec([hostile, tokensTotal] {
        PoolSpec p;
        bool const big = tokensTotal > 16384;
        p.numKVHeads = big ? 1 : *flatRange<int32_t>(1, 5);
        auto const dims = big ? std::make_pair(1, 129)
                              : *pick(std::make_pair(256, 384), std::make_pair(128, 256), std::make_pair(1, 129),
                                      std::make_pair(64, 192), std::make_pair(256, 512));
        p.headSize = dims.first;
        p.poolHeadDim = dims.second;
        p.extraSlots = *flatRange<int32_t>(0, 3);
        p.extraPages = *flatRange<int32_t>(0, 5);
        if (hostile) {
            p.holesPer16 = *pick<int32_t>(0, 3, 8);
            p.outOfPlane = *pick(false, true);
            p.truncated = *pick(false, true);
        }
        p.seed = *rc::gen::arbitrary<uint32_t>();
        fitPool(p, tokensTotal);
        return p;
    });
}

// Independent components (rc::gen::tuple shrinks each with the others held fixed, unlike gen::exec,
// which draws every later pick anew): the regime first, then S, so that shrinking starts with them.
rc::Gen<PrefillSpec> genPrefillSpec(SpecOptions const& o) {
    auto wantB = weightedGen<int32_t>({{8, flatRange<int32_t>(1, 4)}, {2, flatRange<int32_t>(1, 17)}});
    auto kinds = rc::gen::container<std::vector<CtxKind>>(16, genCtxKind());
    auto fracs = rc::gen::container<std::vector<uint32_t>>(4, fraction());
    using Parts = std::tuple<Regime, uint32_t, int32_t, std::vector<CtxKind>, ActSpec, PoolSpec, std::vector<uint32_t>>;
    return rc::gen::map(
        rc::gen::tuple(regimeGen(o.shares), fraction(), wantB, kinds, genActSpec(o.tieBias, o.allowPoison),
                       genPoolSpec(o.hostilePool, 0), fracs),
        [o](Parts const& t) {
            PrefillSpec s;
            s.regime = std::get<0>(t);
            uint32_t const sFrac = std::get<1>(t);
            std::vector<CtxKind> kinds = std::get<3>(t);
            std::vector<uint32_t> const& f = std::get<6>(t);
            s.act = std::get<4>(t);
            bool const gpu = implOnGpu();
            auto fitB = [&](int64_t pairsBudget, int32_t want) {
                int64_t const perSeq = int64_t(s.S) * ceilDiv(s.S, 4);
                int64_t const maxB =
                    std::max<int64_t>(1, std::min<int64_t>(pairsBudget / perSeq, o.budget.maxRows / s.S));
                s.B = int32_t(std::min<int64_t>(want, maxB));
            };
            switch (s.regime) {
            case Regime::kSmall:
                s.S = atFraction(smallSeqLens(), sFrac);
                fitB(o.budget.typicalPairs, std::get<2>(t));
                break;
            case Regime::kPageEdge: {
                std::vector<int32_t> v = {124, 127, 128, 129, 131, 132, 255, 256, 257, 260, 383, 384, 385};
                if (gpu)
                    v.insert(v.end(), {511, 512, 513, 1023, 1024, 1025});
                s.S = atFraction(evenly(v), sFrac);
                fitB(gpu ? o.budget.typicalPairs : o.budget.typicalPairs * 4, std::get<2>(t));
                for (CtxKind& k : kinds) {
                    if (k.kind == 4)
                        k.m = 128; // near a multiple of 128: the last page used is just full / just begun
                }
                break;
            }
            case Regime::kManyBlocks: {
                std::vector<int32_t> v = {2052, 2053, 2054, 2055, 2056, 2059};
                if (gpu)
                    v.insert(v.end(), {2060, 2063, 2100, 2560, 4096, 4099});
                s.S = atFraction(evenly(v), sFrac);
                s.B = gpu ? std::min<int32_t>(std::get<2>(t), s.S > 2100 ? 2 : 4) : 1;
                manyBlocksTies(s.act, f[0]);
                break;
            }
            case Regime::kChunked: {
                // The CPU takes the cheapest placement (in padding, B = 1) in half of its chunked cases.
                ChunkAt const at =
                    atFraction(std::vector<std::pair<size_t, ChunkAt>>{{gpu ? 1u : 3u, ChunkAt::kPadding},
                                                                       {1, ChunkAt::kLastValid},
                                                                       {1, ChunkAt::kSeqStart},
                                                                       {1, ChunkAt::kBlockEdge}},
                               f[0]);
                makeChunked(s, at, f[1], f[2], kinds);
                break;
            }
            }
            if (s.regime != Regime::kChunked) {
                s.ctx.clear();
                for (int32_t b = 0; b < s.B; ++b)
                    s.ctx.push_back(kinds[b].at(s.S));
            }
            if (s.regime == Regime::kManyBlocks) {
                // Sequence 0 reaches nVis > 512: ctx in {S, S - 1, 2052, 2053, 2055}.
                int32_t const c = atFraction(evenly(std::vector<int32_t>{s.S, s.S - 1, 2052, 2053, 2055}), f[1]);
                s.ctx[0] = std::min(s.S, std::max(2052, c));
            }
            s.hasPool = o.pool;
            if (o.pool) {
                s.pool = std::get<5>(t);
                fitPool(s.pool, int64_t(s.B) * s.S);
                // A truncated table (maxPagesPerSeq = needed - 1) is hit only by a sequence past the pages it
                // covers: make sequence 0 full, and draw truncation only where S > 128 can reach past them.
                if (s.pool.truncated && s.S > 128)
                    s.ctx[0] = s.S;
                else
                    s.pool.truncated = false;
            }
            return s;
        });
}

rc::Gen<DecodeChainSpec> genDecodeChainSpec(int32_t maxL, int32_t maxSteps, bool tieBias, bool hostile,
                                            RegimeShares const& shares) {
    RegimeShares sh = shares;
    sh.chunked = 0;
    bool const gpu = implOnGpu();
    auto B = weightedGen<int32_t>({{4, flatRange<int32_t>(1, 3)}, {1, flatRange<int32_t>(1, 9)}});
    auto L = rc::gen::container<std::vector<uint32_t>>(8, fraction());
    // extraBlocks -1 puts the last steps on the floor boundary ctx / 4 == maxBlocks < ceilDiv(ctx, 4).
    auto extras = rc::gen::tuple(weighted<bool>({{3, true}, {1, false}}), flatRange<int32_t>(-1, 3), fraction());
    using Parts = std::tuple<Regime, int32_t, std::vector<uint32_t>, int32_t, ActSpec, PoolSpec,
                             std::tuple<bool, int32_t, uint32_t>>;
    // The prefill lengths of each regime, sorted (shrinking walks towards the first).
    std::vector<std::pair<size_t, int32_t>> smallL;
    for (int32_t l = 0; l <= std::min(maxL, 40); ++l)
        smallL.push_back({3, l});
    for (int32_t l = 41; l <= maxL; l += 7)
        smallL.push_back({1, l});
    std::vector<int32_t> page;
    for (int32_t base : {128, 256, 384})
        for (int32_t d = -5; d <= 1; ++d)
            page.push_back(base + d);
    std::vector<int32_t> many = {2043, 2045, 2047, 2048, 2049, 2050, 2051, 2052, 2055, 2060};
    if (gpu)
        many.insert(many.end(), {2100, 2561, 3000, 4095, 4200});
    auto build = [maxL, gpu, smallL, page = evenly(page), many = evenly(many)](Parts const& t) {
        DecodeChainSpec s;
        s.regime = std::get<0>(t);
        s.B = std::get<1>(t);
        s.steps = std::get<3>(t);
        s.act = std::get<4>(t);
        if (s.regime == Regime::kManyBlocks) {
            s.B = gpu ? std::min(s.B, 4) : 1;
            manyBlocksTies(s.act, std::get<2>(std::get<6>(t)));
        }
        auto const& lens = s.regime == Regime::kPageEdge ? page : (s.regime == Regime::kManyBlocks ? many : smallL);
        for (int32_t b = 0; b < s.B; ++b)
            s.L.push_back(atFraction(lens, std::get<2>(t)[b]));
        // nVis > 512 needs ctx >= 2052 at some step: L + steps >= 2052.
        if (s.regime == Regime::kManyBlocks)
            s.steps = std::max(s.steps, 2052 - s.L[0]);
        s.pool = std::get<5>(t);
        s.splitCounters = std::get<0>(std::get<6>(t));
        s.extraBlocks = std::get<1>(std::get<6>(t));
        // A truncated table truncates only when the chain runs past one page (makeChain sizes the table for
        // max L + steps tokens): force L[0] + steps > 128, or drop the truncation when maxL cannot reach it.
        if (s.pool.truncated && *std::max_element(s.L.begin(), s.L.end()) + s.steps <= 128) {
            if (maxL + s.steps > 128)
                s.L[0] = 129 - s.steps;
            else
                s.pool.truncated = false;
        }
        fitPool(s.pool, int64_t(s.B) * (*std::max_element(s.L.begin(), s.L.end()) + s.steps));
        return s;
    };
    return rc::gen::map(rc::gen::tuple(regimeGen(sh), B, L, flatRange<int32_t>(1, maxSteps + 1),
                                       genActSpec(tieBias, false), genPoolSpec(hostile, 0), extras),
                        build);
}

// ---- printing -------------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, ActSpec const& a) {
    os << (a.dtype == DType::kHalf ? "half" : "bf16") << " payload=" << nameIn(kPayloadNames, a.payload)
       << " ties=" << nameIn(kTiesNames, a.ties);
    if (a.ties == Ties::kDupBlocks)
        os << "(" << a.distinctBlocks << " distinct blocks)";
    os << " rope=" << (a.rope == Rope::kReal ? "theta1e4" : (a.rope == Rope::kModel ? "theta1e7" : "identity"))
       << (a.poisonPadding ? " padding=NaN/Inf" : "") << (a.extremeGamma ? " gamma=extreme" : "") << " eps=0x"
       << std::hex << a.epsBits << std::dec << " seed=" << a.seed;
    return os;
}

std::ostream& operator<<(std::ostream& os, PoolSpec const& p) {
    os << "pool{kvHeads=" << p.numKVHeads << " headSize=" << p.headSize << " poolHeadDim=" << p.poolHeadDim
       << " extraSlots=" << p.extraSlots << " extraPages=" << p.extraPages;
    if (p.holesPer16)
        os << " holes=" << p.holesPer16 << "/16";
    if (p.outOfPlane)
        os << " outOfPlane";
    if (p.truncated)
        os << " truncated";
    return os << " seed=" << p.seed << "}";
}

std::ostream& operator<<(std::ostream& os, PrefillSpec const& s) {
    int64_t const rows = int64_t(s.B) * s.S;
    os << "prefill[" << nameIn(kRegimeNames, s.regime);
    if (s.chunkAt != ChunkAt::kNone)
        os << " boundary " << nameIn(kChunkAtNames, s.chunkAt);
    os << "] B=" << s.B << " S=" << s.S << " MB=" << ceilDiv(s.S, 4) << " Rc=" << ref::prefillChunkRows(s.B, s.S)
       << (ref::prefillChunkRows(s.B, s.S) < rows ? "(chunked)" : "") << " ctx=";
    printVec(os, s.ctx);
    os << " " << s.act;
    if (s.hasPool)
        os << " " << s.pool;
    return os;
}

std::ostream& operator<<(std::ostream& os, DecodeChainSpec const& s) {
    os << "decode-chain[" << nameIn(kRegimeNames, s.regime) << "] B=" << s.B << " L=";
    printVec(os, s.L);
    os << " steps=" << s.steps << " " << s.act << " " << s.pool << (s.splitCounters ? " splitCounters" : "")
       << " extraBlocks=" << s.extraBlocks;
    return os;
}

} // namespace prop
} // namespace qsa

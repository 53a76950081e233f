// RapidCheck properties of the reference alone (contract sections 4, 5 and 7.4): what no contract property of
// properties/ checks. The contract properties (layout, padding, pool hygiene, batch invariance, prefill/decode
// sets and live cells) run against the literal oracle (//oracle), which Differential.* holds equal to
// runPrefill / runDecode bit for bit, so they are not repeated here. Here: logits never NaN / -0.0, the tie
// rule against std::stable_sort, decode set == prefill set, decode numerics == prefill numerics, any
// chunking of the literal stages, padding unread by the stage values, thread-count and caller FP-environment
// independence, and the row-subset entry point (runPrefillRows) against the full computation.
#include "reference/byStages.h"
#include "reference/numerics.h"
#include "reference/qsaReference.h"
#include "reference/rowops.h"
#include "reference/stages.h"
#include "testing/rng.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>
#include <xmmintrin.h>

namespace qsa {
namespace ref {
namespace {

// Random cases: the shape (B, S, ctx, dtype, value mode, pool geometry) is drawn by RapidCheck; the bulk values
// come from testing/rng.h seeded by it (portable: a seed gives the same case with any standard library).
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
    std::iota(kIds.begin(), kIds.end(), 0);
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

struct Shape {
    DType dt;
    int32_t B;
    int32_t S;
    std::vector<int32_t> ctx;
    ValueMode mode;
    uint32_t seed;
};

// B in [1, 3]; S mostly in [1, 40], sometimes up to 300 (several pool pages); ctx in [-1, S + 1] (the
// prefill clamps it to [0, S]), often exactly S or 0.
rc::Gen<Shape> genShape() {
    return rc::gen::exec([] {
        Shape s;
        s.dt = *rc::gen::element(DType::kHalf, DType::kBf16);
        s.B = *rc::gen::inRange(1, 4);
        bool const longSeq = *rc::gen::inRange(0, 8) == 0;
        s.S = longSeq ? *rc::gen::inRange(129, 301) : *rc::gen::inRange(1, 41);
        for (int32_t b = 0; b < s.B; ++b) {
            int const kind = *rc::gen::inRange(0, 4);
            s.ctx.push_back(kind == 0 ? s.S : (kind == 1 ? 0 : *rc::gen::inRange(-1, s.S + 2)));
        }
        s.mode = *rc::gen::element(ValueMode::kTies, ValueMode::kNormal, ValueMode::kSpecial);
        s.seed = *rc::gen::arbitrary<uint32_t>();
        return s;
    });
}

PrefillCase caseOf(Shape const& s) {
    return randomPrefill(s.seed, s.dt, s.B, s.S, s.ctx, s.mode);
}

// outIdx and every stage value of two runs are the same bits.
void requireSameOutputs(PrefillResult const& a, PrefillResult const& b) {
    RC_ASSERT(a.outIdx == b.outIdx);
    RC_ASSERT(a.qNormed == b.qNormed);
    RC_ASSERT(a.kbar == b.kbar);
    RC_ASSERT(std::equal(a.logits.begin(), a.logits.end(), b.logits.begin(), b.logits.end(),
                         [](float x, float y) { return floatBits(x) == floatBits(y); }));
}

// ---- padding is never read, not even by the stages (contract 7.3) ----------------------------------

RC_GTEST_PROP(RefProperties, PoisonedPaddingChangesNothing, ()) {
    Shape const s = *genShape();
    bool const withPool = *rc::gen::arbitrary<bool>();
    PrefillCase c = caseOf(s);
    if (withPool) {
        c.hasPool = true;
        c.pool = randomPool(s.seed + 1, s.B, s.S, true);
    }
    PrefillResult const clean = runPrefill(c);
    // Poison every padded row (t >= ctx): NaN, Inf and random bits in q and k.
    Rng rng(s.seed + 2);
    uint16_t const poison[4] = {0x7E00, 0x7FFF, 0xFC00, 0xFFFF};
    for (int32_t b = 0; b < s.B; ++b) {
        for (int32_t t = clampCtx(s.ctx[b], s.S); t < s.S; ++t) {
            for (int e = 0; e < kQkWidth; ++e) {
                c.indexQk[(static_cast<size_t>(b) * s.S + t) * kQkWidth + e] =
                    rng.next32() % 2 ? poison[rng.next32() % 4] : static_cast<uint16_t>(rng.next32());
            }
        }
    }
    PrefillResult const poisoned = runPrefill(c);
    // outIdx and pool are Padding.PaddedRowsAllMinusOneAndPoisonIgnored's; the stage values are the reference's.
    requireSameOutputs(poisoned, clean);
    RC_ASSERT(poisoned.poolAfter == clean.poolAfter);
}

// ---- logits (contract section 4: relu, masked -FLT_MAX) --------------------------------------------

RC_GTEST_PROP(RefProperties, VisibleLogitsAreNonNegativeNumbers, ()) {
    Shape const s = *genShape();
    PrefillResult const r = runPrefill(caseOf(s));
    int32_t const mb = (s.S + 3) / 4;
    for (int32_t b = 0; b < s.B; ++b) {
        int32_t const ctx = clampCtx(s.ctx[b], s.S);
        for (int32_t t = 0; t < s.S; ++t) {
            int32_t const nVis = t < ctx ? (t + 1) / 4 : 0;
            for (int32_t g = 0; g < mb; ++g) {
                float const l = r.logits[(static_cast<size_t>(b) * s.S + t) * mb + g];
                if (g < nVis) {
                    RC_ASSERT(!std::isnan(l));
                    RC_ASSERT(!std::signbit(l)); // +0.0, positive or +inf; never -0.0
                } else {
                    RC_ASSERT(floatBits(l) == 0xFF7FFFFFu);
                }
            }
        }
    }
}

// ---- the tie rule (contract section 4, Selection) -----------------------------------------------------

// CUB's descending order written independently of cubKey: non-NaN values compare as floats (so -0.0 ==
// +0.0); a positive NaN is above +inf and NaNs of one sign order by their bits (larger bits: further out).
bool cubBefore(float a, float b) {
    bool const na = std::isnan(a);
    bool const nb = std::isnan(b);
    if (!na && !nb) {
        return a > b;
    }
    auto rank = [](float x) -> int64_t { // only the relative order of NaNs and non-NaNs matters
        uint32_t const u = floatBits(x);
        if (!std::isnan(x)) {
            return 0;
        }
        return std::signbit(x) ? -static_cast<int64_t>(u & 0x7FFFFFFFu) - 1 : static_cast<int64_t>(u);
    };
    if (na && nb) {
        return rank(a) > rank(b);
    }
    return na ? !std::signbit(a) : std::signbit(b);
}

// B3's order: as above but -0.0 is below +0.0.
bool selectBefore(float a, float b) {
    if (a == 0.0f && b == 0.0f) {
        return !std::signbit(a) && std::signbit(b);
    }
    return cubBefore(a, b);
}

std::vector<float> tieHeavyLogits(uint32_t seed, int32_t n, bool k2Like) {
    Rng rng(seed);
    float const k2Values[6] = {0.0f, 1.0f, 0.5f, 3.0f, std::numeric_limits<float>::infinity(), 1.0f};
    // +0, -0, 1, -1, +inf, -FLT_MAX and NaNs of both signs.
    uint32_t const anyBits[10] = {0x00000000u, 0x80000000u, 0x3F800000u, 0xBF800000u, 0x7F800000u,
                                  0xFF7FFFFFu, 0x7FC00000u, 0xFFC00000u, 0x7FC00001u, 0xFF800001u};
    std::vector<float> v(n);
    for (auto& x : v) {
        x = k2Like ? k2Values[rng.next32() % 6] : bitsFloat(anyBits[rng.next32() % 10]);
    }
    return v;
}

RC_GTEST_PROP(RefProperties, SortRowsIsStdStableSortWithTheContractComparator, ()) {
    int32_t const numRows = *rc::gen::inRange(1, 4);
    int32_t const numBlocks = *rc::gen::inRange(1, 300);
    uint32_t const seed = *rc::gen::arbitrary<uint32_t>();
    std::vector<float> keys = tieHeavyLogits(seed, numRows * numBlocks, false);
    std::vector<int32_t> values(keys.size());
    Rng rng(seed);
    for (auto& v : values) {
        v = static_cast<int32_t>(rng.next32() % 1000);
    }
    std::vector<float> keysOut(keys.size());
    std::vector<int32_t> valuesOut(keys.size());
    sortRows(keys.data(), keysOut.data(), values.data(), valuesOut.data(), numRows, numBlocks);
    for (int32_t r = 0; r < numRows; ++r) {
        std::vector<int32_t> perm(numBlocks);
        std::iota(perm.begin(), perm.end(), 0);
        float const* k = keys.data() + r * numBlocks;
        std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) { return cubBefore(k[a], k[b]); });
        for (int32_t i = 0; i < numBlocks; ++i) {
            RC_ASSERT(floatBits(keysOut[r * numBlocks + i]) == floatBits(k[perm[i]]));
            RC_ASSERT(valuesOut[r * numBlocks + i] == values[r * numBlocks + perm[i]]);
        }
    }
}

RC_GTEST_PROP(RefProperties, SelectionsMatchStableSortUnderManyTies, ()) {
    int32_t const nVis = *rc::gen::oneOf(rc::gen::inRange(0, 600), rc::gen::inRange(500, 1600));
    uint32_t const seed = *rc::gen::arbitrary<uint32_t>();
    int32_t const kSel = std::min(512, nVis);
    std::vector<int32_t> ids(nVis);
    std::iota(ids.begin(), ids.end(), 0);
    // K2-like logits (never NaN or -0.0): prefill order == the first kSel of std::stable_sort by cubBefore,
    // and decode's set == prefill's set.
    std::vector<float> const k2 = tieHeavyLogits(seed, nVis, true);
    std::vector<int32_t> order = ids;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return cubBefore(k2[a], k2[b]); });
    std::vector<int32_t> sel(512);
    RC_ASSERT(selectPrefillRow(k2.data(), nVis, sel.data()) == kSel);
    for (int32_t i = 0; i < kSel; ++i) {
        RC_ASSERT(sel[i] == order[i]);
    }
    std::vector<int32_t> dsel(512);
    RC_ASSERT(selectDecodeRow(k2.data(), nVis, dsel.data()) == kSel);
    RC_ASSERT(std::is_sorted(dsel.begin(), dsel.begin() + kSel)); // ascending block id
    std::vector<int32_t> prefillSet(order.begin(), order.begin() + kSel);
    std::sort(prefillSet.begin(), prefillSet.end());
    RC_ASSERT(std::equal(prefillSet.begin(), prefillSet.end(), dsel.begin()));
    // Host-written logits with -0.0 and NaNs: decode's set == the first kSel of B3's own order.
    std::vector<float> const any = tieHeavyLogits(seed + 1, nVis, false);
    std::vector<int32_t> order2 = ids;
    std::stable_sort(order2.begin(), order2.end(), [&](int32_t a, int32_t b) { return selectBefore(any[a], any[b]); });
    RC_ASSERT(selectDecodeRow(any.data(), nVis, dsel.data()) == kSel);
    std::vector<int32_t> want(order2.begin(), order2.begin() + kSel);
    std::sort(want.begin(), want.end());
    RC_ASSERT(std::equal(want.begin(), want.end(), dsel.begin()));
}

// ---- prefill/decode numerics (contract 7.6) ----------------------------------------------------------
// The sets, tails and live cells of contract 7.6 are PrefillDecode.StepsMatchPrefillRows's; here the
// reference's decode stages B1/B2 reproduce its prefill's K1a/K2 values bit for bit (the decode steps read
// the kbar that the earlier steps wrote to the pool).

RC_GTEST_PROP(RefProperties, DecodeStepsEqualPrefillNumerics, ()) {
    DType const dt = *rc::gen::element(DType::kHalf, DType::kBf16);
    int32_t const B = *rc::gen::inRange(1, 3);
    int32_t const n = *rc::gen::inRange(1, 10);
    std::vector<int32_t> const L = *rc::gen::container<std::vector<int32_t>>(
        B, rc::gen::oneOf(rc::gen::inRange(0, 30), rc::gen::inRange(120, 140)));
    ValueMode const mode = *rc::gen::element(ValueMode::kTies, ValueMode::kNormal);
    uint32_t const seed = *rc::gen::arbitrary<uint32_t>();
    int32_t const maxL = *std::max_element(L.begin(), L.end());
    int32_t const full = maxL + n; // S of the reference prefill of L + n tokens
    std::vector<int32_t> fullCtx(B);
    for (int32_t b = 0; b < B; ++b) {
        fullCtx[b] = L[b] + n;
    }
    PrefillCase ref = randomPrefill(seed, dt, B, full, fullCtx, mode);
    ref.hasPool = true;
    ref.pool = randomPool(seed + 7, B, full, false); // no holes for the pages in use
    PrefillResult const want = runPrefill(ref);
    // Prefill of the first L[b] tokens (S = max(1, maxL)), then decode steps ctx = L[b] + k.
    int32_t const S0 = std::max(1, maxL);
    PrefillCase pre = ref;
    pre.seqLen = S0;
    pre.contextLengths = L;
    pre.indexQk.assign(static_cast<size_t>(B) * S0 * kQkWidth, 0x7E00);
    for (int32_t b = 0; b < B; ++b) {
        std::copy_n(ref.indexQk.begin() + static_cast<size_t>(b) * full * kQkWidth,
                    static_cast<size_t>(L[b]) * kQkWidth, pre.indexQk.begin() + static_cast<size_t>(b) * S0 * kQkWidth);
    }
    std::vector<uint16_t> pool = runPrefill(pre).poolAfter;
    int32_t const mbFull = (full + 3) / 4;
    int32_t const maxBlocks = mbFull + *rc::gen::inRange(0, 3);
    for (int32_t k = 1; k <= n; ++k) {
        DecodeCase d;
        d.dtype = dt;
        d.batchSize = B;
        d.maxBlocks = maxBlocks;
        d.cosSin = ref.cosSin;
        d.wQ = ref.wQ;
        d.wK = ref.wK;
        d.rmsEps = ref.rmsEps;
        d.pool = ref.pool;
        d.pool.data = pool;
        for (int32_t b = 0; b < B; ++b) {
            d.contextLengths.push_back(L[b] + k);
            auto const src = ref.indexQk.begin() + (static_cast<size_t>(b) * full + L[b] + k - 1) * kQkWidth;
            d.indexQk.insert(d.indexQk.end(), src, src + kQkWidth);
        }
        DecodeResult const got = runDecode(d);
        pool = got.poolAfter;
        for (int32_t b = 0; b < B; ++b) {
            int32_t const t = L[b] + k - 1;
            int64_t const row = static_cast<int64_t>(b) * full + t;
            for (int32_t g = 0; g < (t + 1) / 4; ++g) { // B2's logits are K2's, bit for bit
                RC_ASSERT(floatBits(got.logits[static_cast<size_t>(b) * maxBlocks + g]) ==
                          floatBits(want.logits[row * mbFull + g]));
            }
            for (int e = 0; e < 512; ++e) { // B1's q is K1a's
                RC_ASSERT(got.qNormed[b * 512 + e] == want.qNormed[row * 512 + e]);
            }
        }
    }
}

// ---- chunking, threads, FP environment (contract 7.4, 7.5) -----------------------------------------

RC_GTEST_PROP(RefProperties, PrefillEqualsLiteralStagesForAnyChunking, ()) {
    Shape const s = *genShape();
    PrefillCase const c = caseOf(s);
    PrefillResult const a = runPrefill(c);
    int64_t const chunk = *rc::gen::inRange<int64_t>(1, static_cast<int64_t>(s.B) * s.S + 2);
    requireSameOutputs(a, runPrefillByStages(c, chunk));
}

RC_GTEST_PROP(RefProperties, IndependentOfThreadCountAndCallerFpEnvironment, ()) {
    Shape const s = *genShape();
    PrefillCase const c = caseOf(s);
    PrefillResult const base = runPrefill(c, 1);
    int const mode = *rc::gen::element(FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO);
    unsigned const csr = _mm_getcsr();
    std::fesetround(mode);
    _mm_setcsr(_mm_getcsr() | 0x8040); // FTZ and DAZ on
    PrefillResult const other = runPrefill(c, *rc::gen::inRange(2, 6));
    _mm_setcsr(csr);
    std::fesetround(FE_TONEAREST);
    requireSameOutputs(other, base);
}

// ---- the row-subset entry point equals the full computation -------------------------------------------
// On random small cases (any subset, any order, duplicates) against runPrefill, and on S = 2200 (nVis up to
// 550 > 512, radix-select sized rows) against the literal stage composition with its full stable sorts.

RC_GTEST_PROP(PrefillRows, AnySubsetEqualsFullPrefill, ()) {
    DType const dt = *rc::gen::element(DType::kHalf, DType::kBf16);
    int32_t const B = *rc::gen::inRange(1, 4);
    int32_t const S = *rc::gen::inRange(1, 60);
    std::vector<int32_t> const ctx = *rc::gen::container<std::vector<int32_t>>(B, rc::gen::inRange(-1, S + 2));
    ValueMode const mode = *rc::gen::element(ValueMode::kTies, ValueMode::kNormal, ValueMode::kSpecial);
    PrefillCase const c = randomPrefill(*rc::gen::arbitrary<uint32_t>(), dt, B, S, ctx, mode);
    std::vector<int64_t> const rows =
        *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(0, static_cast<int64_t>(B) * S));
    std::vector<int32_t> const got = runPrefillRows(c, rows, *rc::gen::inRange(1, 4));
    PrefillResult const full = runPrefill(c);
    RC_ASSERT(got.size() == rows.size() * kIndexWidth);
    for (size_t i = 0; i < rows.size(); ++i) {
        RC_ASSERT(std::equal(got.begin() + i * kIndexWidth, got.begin() + (i + 1) * kIndexWidth,
                             full.outIdx.begin() + rows[i] * kIndexWidth));
    }
}

void checkLongRows(ValueMode mode, uint32_t seed) {
    int32_t const S = 2200;
    PrefillCase c = randomPrefill(seed, DType::kBf16, 1, S, {S}, mode);
    c.keepLogits = false;
    std::vector<int64_t> rows = {2199, 2051, 2050, 2049, 2048, 2047, 0, 3, 1000, 2198};
    for (int64_t r = 7; r < S; r += 97) {
        rows.push_back(r);
    }
    std::vector<int32_t> const got = runPrefillRows(c, rows);
    PrefillResult const full = runPrefillByStages(c);
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_TRUE(std::equal(got.begin() + i * kIndexWidth, got.begin() + (i + 1) * kIndexWidth,
                               full.outIdx.begin() + rows[i] * kIndexWidth))
            << "row " << rows[i];
    }
    EXPECT_EQ(runPrefill(c).outIdx, full.outIdx);
}

TEST(PrefillRows, LongSequenceNormalValues) {
    checkLongRows(ValueMode::kNormal, 11);
}
TEST(PrefillRows, LongSequenceManyTies) {
    checkLongRows(ValueMode::kTies, 12);
}

TEST(PrefillRows, RejectsRowsOutsideTheBatch) {
    PrefillCase const c = randomPrefill(1, DType::kHalf, 2, 5, {5, 5}, ValueMode::kNormal);
    EXPECT_THROW(runPrefillRows(c, {10}), std::runtime_error);
    EXPECT_THROW(runPrefillRows(c, {-1}), std::runtime_error);
    EXPECT_TRUE(runPrefillRows(c, {}).empty());
}

} // namespace
} // namespace ref
} // namespace qsa

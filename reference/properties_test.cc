// RapidCheck properties of the reference alone (contract sections 4, 5 and 7.4): what no contract property of
// properties/ checks. The contract properties (layout, padding, pool hygiene, batch invariance, prefill/decode
// sets and live cells) run against the literal oracle (//oracle), which Differential.* holds equal to
// runPrefill / runDecode bit for bit, so they are not repeated here. Here: logits never NaN / -0.0, the tie
// rule against std::stable_sort, decode set == prefill set, decode numerics == prefill numerics, any
// chunking of the literal stages, padding unread by the stage values, thread-count and caller FP-environment
// independence.
#include "reference/byStages.h"
#include "reference/numerics.h"
#include "reference/qsaReference.h"
#include "reference/rowops.h"
#include "reference/stages.h"
#include "reference/testgen.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <xmmintrin.h>

namespace qsa {
namespace ref {
namespace {

using test::ValueMode;

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
    return test::randomPrefill(s.seed, s.dt, s.B, s.S, s.ctx, s.mode);
}

int32_t clampS(int32_t ctx, int32_t S) {
    return std::min(std::max(ctx, 0), S);
}

bool sameBits(std::vector<float> const& a, std::vector<float> const& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) { return floatBits(x) == floatBits(y); });
}

// ---- padding is never read, not even by the stages (contract 7.3) ----------------------------------

RC_GTEST_PROP(RefProperties, PoisonedPaddingChangesNothing, ()) {
    Shape const s = *genShape();
    bool const withPool = *rc::gen::arbitrary<bool>();
    PrefillCase c = caseOf(s);
    if (withPool) {
        c.hasPool = true;
        c.pool = test::randomPool(s.seed + 1, s.B, s.S, true);
    }
    PrefillResult const clean = runPrefill(c);
    // Poison every padded row (t >= ctx): NaN, Inf and random bits in q and k.
    test::Rng rng(s.seed + 2);
    uint16_t const poison[4] = {0x7E00, 0x7FFF, 0xFC00, 0xFFFF};
    for (int32_t b = 0; b < s.B; ++b) {
        for (int32_t t = clampS(s.ctx[b], s.S); t < s.S; ++t) {
            for (int e = 0; e < kQkWidth; ++e) {
                c.indexQk[(static_cast<size_t>(b) * s.S + t) * kQkWidth + e] =
                    rng.next32() % 2 ? poison[rng.next32() % 4] : static_cast<uint16_t>(rng.next32());
            }
        }
    }
    PrefillResult const poisoned = runPrefill(c);
    // outIdx and pool are Padding.PaddedRowsAllMinusOneAndPoisonIgnored's; the stage values are the reference's.
    RC_ASSERT(poisoned.outIdx == clean.outIdx);
    RC_ASSERT(poisoned.qNormed == clean.qNormed);
    RC_ASSERT(poisoned.kbar == clean.kbar);
    RC_ASSERT(sameBits(poisoned.logits, clean.logits));
    RC_ASSERT(poisoned.poolAfter == clean.poolAfter);
}

// ---- logits (contract section 4: relu, masked -FLT_MAX) --------------------------------------------

RC_GTEST_PROP(RefProperties, VisibleLogitsAreNonNegativeNumbers, ()) {
    Shape const s = *genShape();
    PrefillResult const r = runPrefill(caseOf(s));
    int32_t const mb = (s.S + 3) / 4;
    for (int32_t b = 0; b < s.B; ++b) {
        int32_t const ctx = clampS(s.ctx[b], s.S);
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
    test::Rng rng(seed);
    float const k2Values[6] = {0.0f, 1.0f, 0.5f, 3.0f, std::numeric_limits<float>::infinity(), 1.0f};
    float const anyValues[10] = {0.0f,
                                 -0.0f,
                                 1.0f,
                                 -1.0f,
                                 std::numeric_limits<float>::infinity(),
                                 -FLT_MAX,
                                 bitsFloat(0x7FC00000u),
                                 bitsFloat(0xFFC00000u),
                                 bitsFloat(0x7FC00001u),
                                 bitsFloat(0xFF800001u)};
    std::vector<float> v(n);
    for (auto& x : v) {
        x = k2Like ? k2Values[rng.next32() % 6] : anyValues[rng.next32() % 10];
    }
    return v;
}

RC_GTEST_PROP(RefProperties, SortRowsIsStdStableSortWithTheContractComparator, ()) {
    int32_t const numRows = *rc::gen::inRange(1, 4);
    int32_t const numBlocks = *rc::gen::inRange(1, 300);
    uint32_t const seed = *rc::gen::arbitrary<uint32_t>();
    std::vector<float> keys = tieHeavyLogits(seed, numRows * numBlocks, false);
    std::vector<int32_t> values(keys.size());
    test::Rng rng(seed);
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
    PrefillCase ref = test::randomPrefill(seed, dt, B, full, fullCtx, mode);
    ref.hasPool = true;
    ref.pool = test::randomPool(seed + 7, B, full, false); // no holes for the pages in use
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
    PrefillResult const b = runPrefillByStages(c, chunk);
    RC_ASSERT(a.outIdx == b.outIdx);
    RC_ASSERT(a.qNormed == b.qNormed);
    RC_ASSERT(a.kbar == b.kbar);
    RC_ASSERT(sameBits(a.logits, b.logits));
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
    RC_ASSERT(other.outIdx == base.outIdx);
    RC_ASSERT(other.qNormed == base.qNormed);
    RC_ASSERT(other.kbar == base.kbar);
    RC_ASSERT(sameBits(other.logits, base.logits));
}

} // namespace
} // namespace ref
} // namespace qsa

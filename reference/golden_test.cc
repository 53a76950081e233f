// Hand-derived golden cases of the whole pipelines (contract sections 4-5). Inputs are small and chosen so
// that every expected value can be derived on paper; each derivation is in the comment next to it. None of
// the expected values comes from running the reference.
//
// Shared derivations (T = half, gammas w = 0, rmsEps = 0, cos = 1, sin = 0 unless a test says otherwise):
//  (N1) normRope of x with every |x[d]| = 1: each lane's chain fma(x,x,.) gives 1, 2, 3, 4 exactly; the
//       butterfly of 32 fours is 128 (exact); v = fma(128, 2^-7, 0) = 1; inv = 1/sqrt(1) = 1; y = (x * 1) *
//       (1 + 0) = x; rope with c = 1, s = 0: o[i] = fma(y[i], 1, -(y[i+32] * 0)) = y[i] + (+-0) = y[i], same
//       for o[i+32]. So normRope(x) = x: qNormed / kbar are the input signs as half +-1 (0x3C00 / 0xBC00).
//  (N2) K1b block mean of four equal +-1 tokens: (((a + a) + a) + a) * 0.25 = a exactly.
//  (N3) K2 of q = all +1 against kbar k: lane l's chain sums k[l], k[l+32], k[l+64], k[l+96] (exact small
//       integers); the butterfly sums 32 integers (exact): dot_h = sum of k. logit = 4 * relu(dot) *
//       0x3DB504F3; for dot = 128: 512 * c = 0x3DB504F3 + (9 << 23) = 0x423504F3 (a power of two times c is
//       exact); for dot = 64: 256 * c = 0x41B504F3; for dot = 0: +0.0.
//  (A)  pattern A: dims [0, 64) = -1, [64, 128) = +1. Against q = +1: lane l (l < 32) chains
//       fma(1,-1,0) = -1, fma(1,-1,-1) = -2, fma(1,1,-2) = -1, fma(1,1,-1) = +0 (exact zero is +0 in RNE),
//       so every lane is +0, dot = +0, logit = +0.0 (bits 0).
#include "reference/byStages.h"
#include "reference/numerics.h"
#include "reference/qsaReference.h"
#include "reference/stages.h"
#include "testing/inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <numeric>

namespace qsa {
namespace ref {
namespace {

constexpr uint16_t kHalfOne = 0x3C00;
constexpr uint16_t kHalfMinusOne = 0xBC00;
constexpr uint16_t kHalfNaN = 0x7E00;
constexpr uint32_t kLogit128 = 0x423504F3u; // (N3) dot = 128 on every head
constexpr uint32_t kLogit64 = 0x41B504F3u;  // (N3) dot = 64 on every head
uint32_t const kMinusFltMax = floatBits(-FLT_MAX);

// A prefill case with every input element set to `fill` bits, zero gammas, rmsEps = 0, cos = 1, sin = 0.
PrefillCase blankPrefill(DType dt, int32_t batchSize, int32_t seqLen, std::vector<int32_t> ctx, uint16_t fill) {
    PrefillCase c;
    c.dtype = dt;
    c.batchSize = batchSize;
    c.seqLen = seqLen;
    c.indexQk.assign(static_cast<size_t>(batchSize) * seqLen * kQkWidth, fill);
    c.cosSin = testlib::identityRope(seqLen);
    c.contextLengths = std::move(ctx);
    c.wQ.assign(128, 0);
    c.wK.assign(128, 0);
    c.rmsEps = 0.0f;
    return c;
}

uint16_t* qkRow(PrefillCase& c, int32_t b, int32_t t) {
    return c.indexQk.data() + (static_cast<size_t>(b) * c.seqLen + t) * kQkWidth;
}

// The expected row: `prefix` then -1 up to 2051.
std::vector<int32_t> rowOf(std::vector<int32_t> prefix) {
    prefix.resize(kIndexWidth, -1);
    return prefix;
}

std::vector<int32_t> rowVec(std::vector<int32_t> const& outIdx, int64_t r) {
    return std::vector<int32_t>(outIdx.begin() + r * kIndexWidth, outIdx.begin() + (r + 1) * kIndexWidth);
}

// The first of the n elements of v from `begin` that is not `want`, or -1.
int64_t firstNot(std::vector<uint16_t> const& v, size_t begin, size_t n, uint16_t want) {
    auto const it = std::find_if(v.begin() + begin, v.begin() + begin + n, [&](uint16_t x) { return x != want; });
    return it == v.begin() + begin + n ? -1 : it - (v.begin() + begin);
}

void setQ(PrefillCase& c, int32_t b, int32_t t, uint16_t v) {
    std::fill_n(qkRow(c, b, t), 512, v);
}

// Raw k of row (b, t): dims [0, 64) = lo, [64, 128) = hi (lo = -1, hi = +1: pattern A).
void setK(PrefillCase& c, int32_t b, int32_t t, uint16_t lo, uint16_t hi) {
    std::fill_n(qkRow(c, b, t) + 512, 64, lo);
    std::fill_n(qkRow(c, b, t) + 576, 64, hi);
}

// B = 7 sequences of S = 8 with ctx = 0, 1, 3, 4, 5, 7, 8. Real rows (t < ctx): q = +1; block 0's tokens
// have k = pattern A, block 1's tokens k = +1. Every row t >= ctx is NaN (0x7E00) everywhere: padded inputs
// must never be read.
std::vector<int32_t> const kCtx = {0, 1, 3, 4, 5, 7, 8};

PrefillCase contextLengthsCase() {
    PrefillCase c = blankPrefill(DType::kHalf, 7, 8, kCtx, kHalfNaN);
    for (int32_t b = 0; b < 7; ++b) {
        for (int32_t t = 0; t < kCtx[b]; ++t) {
            setQ(c, b, t, kHalfOne);
            setK(c, b, t, t < 4 ? kHalfMinusOne : kHalfOne, kHalfOne);
        }
    }
    return c;
}

// Expected row (b, t) of contextLengthsCase (contract K4): nVis = (t + 1) / 4, tail = (t + 1) % 4. Padded
// rows (t >= ctx, all of ctx = 0) are all -1. Rows t < 7 see at most block 0: block 0 (if visible) then
// the tail, that is tokens 0..t in order. Row 7: nVis 2, block 1 (logit 0x423504F3) before block 0 (+0.0).
std::vector<int32_t> expectedRow(int32_t b, int32_t t) {
    if (t >= kCtx[b]) {
        return rowOf({});
    }
    if (t == 7) {
        return rowOf({4, 5, 6, 7, 0, 1, 2, 3});
    }
    std::vector<int32_t> tokens(t + 1);
    std::iota(tokens.begin(), tokens.end(), 0);
    return rowOf(tokens);
}

void checkContextLengthsResult(PrefillResult const& r) {
    for (int32_t b = 0; b < 7; ++b) {
        for (int32_t t = 0; t < 8; ++t) {
            int64_t const row = b * 8 + t;
            EXPECT_EQ(rowVec(r.outIdx, row), expectedRow(b, t)) << "b=" << b << " ctx=" << kCtx[b] << " t=" << t;
            // qNormed: (N1) +1 for real rows; exact zeros for padded rows.
            EXPECT_EQ(firstNot(r.qNormed, row * 512, 512, t < kCtx[b] ? kHalfOne : 0), -1) << "b=" << b << " t=" << t;
            // logits [B*S, 2]: (A) block 0 = +0.0, (N3) block 1 = 0x423504F3; invisible / padded -FLT_MAX.
            int32_t const nVis = t < kCtx[b] ? (t + 1) / 4 : 0;
            EXPECT_EQ(floatBits(r.logits[row * 2 + 0]), nVis > 0 ? 0u : kMinusFltMax);
            EXPECT_EQ(floatBits(r.logits[row * 2 + 1]), nVis > 1 ? kLogit128 : kMinusFltMax);
        }
        // kbar: block 0 valid iff 3 < ctx: (N2)+(N1) pattern A; block 1 valid iff 7 < ctx: +1. Else zeros.
        for (int d = 0; d < 128; ++d) {
            uint16_t const a = d < 64 ? kHalfMinusOne : kHalfOne;
            EXPECT_EQ(r.kbar[(b * 2 + 0) * 128 + d], kCtx[b] >= 4 ? a : 0) << "b=" << b << " d=" << d;
            EXPECT_EQ(r.kbar[(b * 2 + 1) * 128 + d], kCtx[b] >= 8 ? kHalfOne : 0) << "b=" << b << " d=" << d;
        }
    }
}

TEST(GoldenPrefill, ContextLengths0134578) {
    checkContextLengthsResult(runPrefill(contextLengthsCase()));
}

TEST(GoldenPrefill, ContextLengthsByStages) {
    // The literal stage composition, with chunks of 5 rows so that chunk boundaries cut sequences.
    checkContextLengthsResult(runPrefillByStages(contextLengthsCase(), 5));
}

TEST(GoldenPrefill, ContextLengthsRowSubset) {
    PrefillCase const c = contextLengthsCase();
    std::vector<int64_t> rows = {55, 0, 47, 54, 30, 31, 6, 7, 13};
    std::vector<int32_t> const out = runPrefillRows(c, rows);
    for (size_t i = 0; i < rows.size(); ++i) {
        int32_t const b = static_cast<int32_t>(rows[i] / 8);
        EXPECT_EQ(rowVec(out, static_cast<int64_t>(i)), expectedRow(b, rows[i] % 8)) << rows[i];
    }
}

TEST(GoldenPrefill, TiesByAscendingBlockId) {
    // S = ctx = 16, q = +1. Blocks 0 and 2: pattern A (logit +0.0); blocks 1 and 3: +1 (logit 0x423504F3).
    // Row 15: nVis 4, tail 0. Logit descending, equal logits by ascending id: 1, 3, then 0, 2.
    PrefillCase c = blankPrefill(DType::kHalf, 1, 16, {16}, kHalfOne);
    for (int32_t t = 0; t < 16; ++t) {
        if ((t / 4) % 2 == 0) {
            setK(c, 0, t, kHalfMinusOne, kHalfOne);
        }
    }
    PrefillResult const r = runPrefill(c);
    EXPECT_EQ(rowVec(r.outIdx, 15), rowOf({4, 5, 6, 7, 12, 13, 14, 15, 0, 1, 2, 3, 8, 9, 10, 11}));
    // Row 11: nVis 3 (blocks 0, 1, 2): 1, then 0, 2.
    EXPECT_EQ(rowVec(r.outIdx, 11), rowOf({4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11}));
    // Row 14: nVis 3, tail 3: 1, 0, 2, then tokens 12, 13, 14.
    EXPECT_EQ(rowVec(r.outIdx, 14), rowOf({4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14}));
    EXPECT_EQ(runPrefillByStages(c).outIdx, r.outIdx);
}

TEST(GoldenPrefill, RopeRotatesFirst64Dims) {
    // S = ctx = 8, all q = +1, all k = +1, but cosSin row 4 has cos = 0, sin = 1 (others cos 1, sin 0).
    // Block 1 (pos 4): y = +1 (N1), o[i] = fma(1, 0, -(1 * 1)) = -1 for i < 32, o[i+32] = fma(1, 0, 1 * 1) = +1,
    // o[d] = 1 for d >= 64. The query row 4 (pos 4) gets the same vector; rows at other positions stay +1.
    // Row 7 (q all +1) against block 1: per lane -1 + 1 + 1 + 1 = 2, dot = 64 -> logit 0x41B504F3 (N3);
    // against block 0 (all +1, pos 0): dot 128 -> 0x423504F3. Row 7 order: block 0, then block 1.
    PrefillCase c = blankPrefill(DType::kHalf, 1, 8, {8}, kHalfOne);
    std::fill_n(c.cosSin.begin() + 4 * 64, 32, 0.0f);
    std::fill_n(c.cosSin.begin() + 4 * 64 + 32, 32, 1.0f);
    PrefillResult const r = runPrefill(c);
    for (int d = 0; d < 128; ++d) {
        uint16_t const rotated = d < 32 ? kHalfMinusOne : kHalfOne;
        EXPECT_EQ(r.kbar[1 * 128 + d], rotated) << d;
        EXPECT_EQ(r.kbar[0 * 128 + d], kHalfOne) << d;
        for (int h = 0; h < 4; ++h) {
            EXPECT_EQ(r.qNormed[(4 * 4 + h) * 128 + d], rotated) << d;
            EXPECT_EQ(r.qNormed[(7 * 4 + h) * 128 + d], kHalfOne) << d;
        }
    }
    EXPECT_EQ(floatBits(r.logits[7 * 2 + 0]), kLogit128);
    EXPECT_EQ(floatBits(r.logits[7 * 2 + 1]), kLogit64);
    EXPECT_EQ(rowVec(r.outIdx, 7), rowOf({0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(GoldenPrefill, BlockMeanIsCastToTBeforeNormRope) {
    // S = ctx = 4, half. Dim 0 of the four tokens: 4 (0x4400), 2^-9 (0x1800), 2^-18 (0x0040, subnormal), 0;
    // every other dim +1. Mean of dim 0: ((4 + 2^-9) + 2^-18) + 0 = 4 + 2^-9 + 2^-18 (exact, 20 bits);
    // * 0.25 = 1 + 2^-11 + 2^-20: above the half midpoint 1 + 2^-11, so the cast gives m0 = 1 + 2^-10.
    // normRope of m = [1 + 2^-10, 1, ...]: lane 0: m0^2 = 1 + 2^-9 + 2^-20 (exact), + 1 + 1 + 1 (exact) =
    // 4 + 2^-9 + 2^-20; other lanes 4. Butterfly lane 0: m=16: 8 + 2^-9 + 2^-20 (exact); m=8: 16 + 2^-9 +
    // 2^-20 is a tie at ulp 2^-19 -> even 16 + 2^-9; then 32, 64, 128 + 2^-9 (exact). v = 1 + 2^-16.
    // inv = RN(1 - 2^-17 + 3 * 2^-35 - ...) = 1 - 2^-17. y0 = (1 + 2^-10)(1 - 2^-17) = 1 + 2^-10 - 2^-17 -
    // 2^-27 -> 1 + 2^-10 - 2^-17 (2^-27 < half ulp 2^-24); rope identity; cast: above 1 + 2^-11 -> 0x3C01.
    // Other dims: 1 * inv = 1 - 2^-17 -> half 1 (0x3C00).
    // Without the mean's cast: m0 = 1 + 2^-11 + 2^-20 gives v = 1 + 2^-17, inv = 1 - 2^-18 and y0 ~ 1 + 2^-11
    // + 2^-20 - 2^-18 < 1 + 2^-11: the cast would give 0x3C00.
    PrefillCase c = blankPrefill(DType::kHalf, 1, 4, {4}, kHalfOne);
    uint16_t const dim0[4] = {0x4400, 0x1800, 0x0040, 0x0000};
    for (int32_t t = 0; t < 4; ++t) {
        qkRow(c, 0, t)[512] = dim0[t];
    }
    PrefillResult const r = runPrefill(c);
    EXPECT_EQ(r.kbar[0], 0x3C01);
    EXPECT_EQ(firstNot(r.kbar, 1, 127, kHalfOne), -1);
}

TEST(GoldenPrefill, SumOfSquaresFmaChainSeenThroughBf16Subnormals) {
    // bf16, S = ctx = 1; every q head: dims 4l..4l+3 = [0, 0, 1.5 * 2^-75 (0x1A40), 1.5 * 2^-74 (0x1AC0)].
    // With u = 2^-149 (the smallest float subnormal), lane l's chain: fma(0,0,0) twice = +0;
    // fma(a, a, 0) with a^2 = 2.25 * 2^-150 = 1.125u -> u; fma(b, b, u) with b^2 = 2.25 * 2^-148 = 4.5u:
    // u + 4.5u = 5.5u is a tie -> even 6u. 32 equal lanes: s = 192u (exact). v = fma(192u, 2^-7, 0) =
    // RN(1.5u) = 2u (tie -> even) = 2^-148; inv = 2^74 exactly. y = x * 2^74 * (1 + 0): a -> 0.75 (0x3F40),
    // b -> 1.5 (0x3FC0), 0 -> +0; rope with c = 1, s = 0 keeps them.
    // (A product then a sum rounds b^2 = 4.5u to 4u (tie -> even) and gives 5u per lane, s = 160u,
    // v = RN(1.25u) = u, inv = 2^74.5: every nonzero output would differ.)
    PrefillCase c = blankPrefill(DType::kBf16, 1, 1, {1}, 0x0000);
    for (int e = 0; e < 512; ++e) {
        c.indexQk[e] = e % 4 == 2 ? 0x1A40 : (e % 4 == 3 ? 0x1AC0 : 0x0000);
    }
    PrefillResult const r = runPrefill(c);
    for (int e = 0; e < 512; ++e) {
        ASSERT_EQ(r.qNormed[e], e % 4 == 2 ? 0x3F40 : (e % 4 == 3 ? 0x3FC0 : 0x0000)) << e;
    }
    EXPECT_EQ(rowVec(r.outIdx, 0), rowOf({0}));
}

TEST(GoldenScores, NegativeZeroDotGivesPositiveZeroLogit) {
    // bf16, S = ctx = 4: row 3 sees block 0. qNormed of row 3 = -2^-75 (0x9A00), kbar = 2^-75 (0x1A00).
    // Each product is -2^-150, half the smallest subnormal: fma(q, k, +0) = RN(-2^-150) = -0.0 (tie, even),
    // and fma(q, k, -0) = -0.0 again; the butterfly adds -0 + -0 = -0: dot = -0.0 on every head.
    // relu(-0.0) = +0.0, so logit = (((+0 + +0) + +0) + +0) * c = +0.0 (bits 0). Rows 0..2: nVis 0.
    std::vector<uint16_t> q(4 * 512, 0);
    std::fill_n(q.begin() + 3 * 512, 512, 0x9A00);
    std::vector<uint16_t> kbar(128, 0x1A00);
    std::vector<float> logits(4, 1.0f);
    int32_t const ctx = 4;
    scores(DType::kBf16, logits.data(), q.data(), kbar.data(), &ctx, 1, 4, 0, 4);
    EXPECT_EQ(floatBits(logits[3]), 0u);
    for (int t = 0; t < 3; ++t) {
        EXPECT_EQ(logits[t], -FLT_MAX);
    }
}

// ---- decode -------------------------------------------------------------------------------------------

// Pool: numPages 4, 1 KV head, poolHeadDim 256, headSize 128 (tail columns [128, 256)), maxPagesPerSeq 1.
// Sequence b (b < 4) uses K page b and V page 4 + b.
HostPool smallPool(int32_t batchSize) {
    HostPool p;
    p.dims.numPages = 4;
    p.dims.maxPagesPerSeq = 1;
    p.dims.numKVHeads = 1;
    p.dims.poolHeadDim = 256;
    p.dims.headSize = 128;
    p.pageTable.assign(static_cast<size_t>(batchSize) * 2, -1);
    for (int32_t b = 0; b < batchSize; ++b) {
        p.pageTable[b * 2 + 0] = b;     // K plane
        p.pageTable[b * 2 + 1] = 4 + b; // V plane, already offset by numPages
    }
    p.data.assign(static_cast<size_t>(8) * 128 * 256, 0x1111); // sentinel bits everywhere
    return p;
}

size_t cell(int32_t page, int32_t row, int32_t col) {
    return (static_cast<size_t>(page) * 128 + row) * 256 + col;
}

// The tail (columns [128, 256)) of pool row `row` of `page`: dims [0, 64) = lo, [64, 128) = hi.
void setTail(std::vector<uint16_t>& data, int32_t page, int32_t row, uint16_t lo, uint16_t hi) {
    std::fill_n(data.begin() + cell(page, row, 128), 64, lo);
    std::fill_n(data.begin() + cell(page, row, 192), 64, hi);
}

// A half decode case: q = k = +1 in every row, cos 1 / sin 0 over `ropeRows` positions, zero gammas (1 + w = 1),
// eps 0, one page per plane per sequence (smallPool).
DecodeCase onesDecode(std::vector<int32_t> const& ctx, int32_t maxBlocks, int32_t ropeRows) {
    DecodeCase c;
    c.dtype = DType::kHalf;
    c.batchSize = static_cast<int32_t>(ctx.size());
    c.maxBlocks = maxBlocks;
    c.indexQk.assign(ctx.size() * 640, kHalfOne);
    c.cosSin = testlib::identityRope(ropeRows);
    c.contextLengths = ctx;
    c.wQ.assign(128, 0);
    c.wK.assign(128, 0);
    c.rmsEps = 0.0f;
    c.pool = smallPool(c.batchSize);
    return c;
}

TEST(GoldenDecode, OneStepThreeSequences) {
    // b0: ctx 1 (pos 0): stores its raw k in K-tail of token 0; nVis 0, tail 1 -> [0].
    // b1: ctx 4 (pos 3): completes block 0 from K-tails of tokens 0..2 (pre-filled with +1) and its input
    //     k (+1): kbar = +1 (N1, N2) into V-tail of token 0; B2 reads it back: dot 128 -> 0x423504F3 (N3);
    //     nVis 1 <= 512: all blocks, tail 0 -> [0, 1, 2, 3]. Its raw k is not stored.
    // b2: ctx 5 (pos 4): K-tail of token 4 gets its raw k; block 0 read from the V-tail of token 0, which
    //     holds pattern A: logit +0.0 (A); tail 1 -> [0, 1, 2, 3, 4].
    // b3: ctx 0: invalid: zero qNormed, all -1, no pool cell, no logit.
    DecodeCase c = onesDecode({1, 4, 5, 0}, 2, 5);
    std::fill_n(c.indexQk.begin() + 3 * 640, 640, kHalfNaN); // the invalid row is never read
    c.pool.pageTable[3 * 2 + 0] = -1;                        // b3 has no pages
    c.pool.pageTable[3 * 2 + 1] = -1;
    for (int32_t t = 0; t < 3; ++t) {
        setTail(c.pool.data, 1, t, kHalfOne, kHalfOne); // b1's K-tails of tokens 0..2
    }
    setTail(c.pool.data, 4 + 2, 0, kHalfMinusOne, kHalfOne); // b2's V-tail of block 0: pattern A
    c.hasSplitCounters = true;
    c.splitCounters = {7, 7, 7, 7}; // [B, numKVHeads = 1]
    DecodeResult const r = runDecode(c);
    EXPECT_EQ(rowVec(r.outIdx, 0), rowOf({0}));
    EXPECT_EQ(rowVec(r.outIdx, 1), rowOf({0, 1, 2, 3}));
    EXPECT_EQ(rowVec(r.outIdx, 2), rowOf({0, 1, 2, 3, 4}));
    EXPECT_EQ(rowVec(r.outIdx, 3), rowOf({}));
    EXPECT_EQ(r.splitCountersAfter, std::vector<int32_t>({0, 0, 0, 0}));
    EXPECT_EQ(floatBits(r.logits[1 * 2 + 0]), kLogit128);
    EXPECT_EQ(floatBits(r.logits[2 * 2 + 0]), 0u);
    for (int32_t b = 0; b < 4; ++b) {
        EXPECT_EQ(r.logits[b * 2 + 1], -FLT_MAX); // beyond the valid prefix
        EXPECT_EQ(firstNot(r.qNormed, b * 512, 512, b < 3 ? kHalfOne : 0), -1) << "b=" << b;
    }
    EXPECT_EQ(r.logits[0], -FLT_MAX);
    EXPECT_EQ(r.logits[3 * 2], -FLT_MAX);
    // Pool: exactly these cells changed: b0's K-tail of token 0 (page 0 row 0), b1's V-tail of token 0
    // (page 5 row 0, +1 bits), b2's K-tail of token 4 (page 2 row 4).
    std::vector<uint16_t> want = c.pool.data;
    setTail(want, 0, 0, kHalfOne, kHalfOne);
    setTail(want, 5, 0, kHalfOne, kHalfOne);
    setTail(want, 2, 4, kHalfOne, kHalfOne);
    EXPECT_TRUE(r.poolAfter == want);
}

TEST(GoldenDecode, DroppedVTailWriteReadsZero) {
    // ctx 4 with V page entry -1: B1's kbar write is dropped, B2 reads +0.0 for every element: dot = +0
    // (fma(1, +0, +0) = +0), logit +0.0; output [0, 1, 2, 3]; the pool is unchanged (the completing
    // token's raw k is not stored).
    DecodeCase c = onesDecode({4}, 1, 4);
    c.pool.pageTable[1] = -1;
    DecodeResult const r = runDecode(c);
    EXPECT_EQ(floatBits(r.logits[0]), 0u);
    EXPECT_EQ(rowVec(r.outIdx, 0), rowOf({0, 1, 2, 3}));
    EXPECT_TRUE(r.poolAfter == c.pool.data);
    EXPECT_TRUE(r.splitCountersAfter.empty());
}

TEST(GoldenDecode, NegativeZeroDotGivesPositiveZeroLogitInB2) {
    // B2 alone, bf16, ctx 4: qNormed = -2^-75 (0x9A00), the V-tail of token 0 = 2^-75 (0x1A00): as in
    // GoldenScores.NegativeZeroDotGivesPositiveZeroLogit every dot is -0.0 and the logit is +0.0 (bits 0).
    HostPool p = smallPool(1);
    setTail(p.data, 4, 0, 0x1A00, 0x1A00);
    std::vector<uint16_t> q(512, 0x9A00);
    std::vector<float> logits(2, 7.0f);
    int32_t const ctx = 4;
    PoolView const view{p.data.data(), p.pageTable.data(), p.dims};
    decodeScores(DType::kBf16, logits.data(), q.data(), &ctx, view, 1, 2);
    EXPECT_EQ(floatBits(logits[0]), 0u);
    EXPECT_EQ(logits[1], 7.0f); // only the valid prefix ctx / 4 = 1 is written
}

TEST(GoldenDecode, ValidityByFloorOfCtxOver4) {
    // Contract section 5: a decode row is invalid iff ctx < 1 or ctx / 4 > maxBlocks (floor). maxBlocks 1:
    // b0: ctx 5: 5 / 4 = 1 == maxBlocks < ceilDiv(5, 4) = 2: VALID and normal: pos 4, qNormed = +1 (N1); its
    //     raw k (+1) to the K-tail of token 4 (page 0 row 4); B2 logit of block 0 from the V-tail of token 0
    //     (pre-filled +1): dot 128 -> 0x423504F3 (N3); nVis 1 <= 512: all blocks; tail ctx % 4 = 1 ->
    //     [0, 1, 2, 3, 4].
    // b1: ctx 7: 7 / 4 = 1 == maxBlocks < ceilDiv(7, 4) = 2: valid: K-tail of token 6 (page 1 row 6) = +1;
    //     V-tail of token 0 holds pattern A: logit +0.0 (A); tail 3 -> [0, 1, 2, 3, 4, 5, 6].
    // b2: ctx 8: 8 / 4 = 2 == maxBlocks + 1: invalid: zero qNormed, all -1, no logit, no pool cell (the
    //     block it would complete, 1, has no logits column); its NaN input changes nothing.
    DecodeCase c = onesDecode({5, 7, 8}, 1, 8);
    std::fill_n(c.indexQk.begin() + 2 * 640, 640, kHalfNaN);
    setTail(c.pool.data, 4 + 0, 0, kHalfOne, kHalfOne);      // b0's V-tail of block 0
    setTail(c.pool.data, 4 + 1, 0, kHalfMinusOne, kHalfOne); // b1's: pattern A
    for (int32_t t = 4; t < 7; ++t) {
        setTail(c.pool.data, 2, t, kHalfOne, kHalfOne); // b2's K-tails of tokens 4..6 (never read)
    }
    DecodeResult const r = runDecode(c);
    EXPECT_EQ(rowVec(r.outIdx, 0), rowOf({0, 1, 2, 3, 4}));
    EXPECT_EQ(rowVec(r.outIdx, 1), rowOf({0, 1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(rowVec(r.outIdx, 2), rowOf({}));
    EXPECT_EQ(floatBits(r.logits[0]), kLogit128);
    EXPECT_EQ(floatBits(r.logits[1]), 0u);
    EXPECT_EQ(r.logits[2], -FLT_MAX); // no logit for the invalid row
    for (int32_t b = 0; b < 3; ++b) {
        EXPECT_EQ(firstNot(r.qNormed, b * 512, 512, b < 2 ? kHalfOne : 0), -1) << "b=" << b;
    }
    std::vector<uint16_t> want = c.pool.data;
    setTail(want, 0, 4, kHalfOne, kHalfOne);
    setTail(want, 1, 6, kHalfOne, kHalfOne);
    EXPECT_TRUE(r.poolAfter == want);
}

TEST(GoldenDecode, RowBeyondMaxBlocksIsInvalid) {
    // ctx 9 with maxBlocks 1: 9 / 4 = 2 > 1: invalid: all -1, zero qNormed, no pool cell.
    DecodeCase c = onesDecode({9}, 1, 9); // eps 0 here too: an invalid row reads nothing
    DecodeResult const r = runDecode(c);
    EXPECT_EQ(rowVec(r.outIdx, 0), rowOf({}));
    EXPECT_TRUE(r.poolAfter == c.pool.data);
    EXPECT_EQ(firstNot(r.qNormed, 0, 512, 0), -1);
}

TEST(GoldenWorkspace, PrefillSlotsPaddedTo128Bytes) {
    // B = 1, S = 8: MB = 2. qNormed 1*8*4*128 T = 8192 bytes; kbar 1*2*128 T = 512; the four sort slots hold
    // min(B*S*MB = 16, max(8388608, 256*MB)) = 16 elements = 64 bytes -> 128 each; CUB temp: max(query, 1 MiB),
    // aligned to 128. Total 8192 + 512 + 4*128 + 1048576 = 1057792.
    EXPECT_EQ(prefillWorkspaceBytes(1, 8, 0), 1057792u);
    EXPECT_EQ(prefillWorkspaceBytes(1, 8, 1048577), 8192u + 512u + 512u + 1048704u); // alignUp(1048577)
    // B = 2, S = 4096: MB = 1024; qNormed 2*4096*512*2 = 8388608; kbar 2*1024*256 = 524288; sort slots:
    // min(2*4096*1024 = 8388608, max(8388608, 262144)) = 8388608 elements * 4 bytes each, four of them.
    EXPECT_EQ(prefillWorkspaceBytes(2, 4096, 5000000), 8388608u + 524288u + 4u * 33554432u + 5000064u);
    EXPECT_THROW(prefillWorkspaceBytes(0, 8, 0), std::runtime_error);
    EXPECT_THROW(prefillWorkspaceBytes(1, -1, 0), std::runtime_error);
}

TEST(GoldenWorkspace, DecodeSlots) {
    // qNormed [B,1,4,128] T = 2*1024 = 2048 bytes; logits [2, 3] FP32 = 24 -> 128. Total 2176.
    EXPECT_EQ(decodeWorkspaceBytes(2, 3), 2176u);
    EXPECT_EQ(decodeWorkspaceBytes(1, 32), 1024u + 128u);
    EXPECT_THROW(decodeWorkspaceBytes(1, 0), std::runtime_error);
}

TEST(GoldenWorkspace, SlotOffsetsOfOneRun) {
    // Prefill B = 3, S = 5 (MB 2): qNormed 3*5*4*128*2 = 15360 bytes (a multiple of 128) at 0; kbar at 15360,
    // 3*2*128*2 = 1536 bytes; sort slots of min(3*5*2 = 30, ...) = 30 elements = 120 bytes -> 128 each, at
    // 16896, 17024, 17152, 17280; CUB temp at 17408.
    PrefillWorkspaceLayout const p = prefillWorkspaceLayout(3, 5);
    EXPECT_EQ(p.qNormed, 0u);
    EXPECT_EQ(p.qNormedBytes, 15360u);
    EXPECT_EQ(p.kbar, 15360u);
    EXPECT_EQ(p.kbarBytes, 1536u);
    EXPECT_EQ(p.keys, 16896u);
    EXPECT_EQ(p.keysAlt, 17024u);
    EXPECT_EQ(p.values, 17152u);
    EXPECT_EQ(p.valuesAlt, 17280u);
    EXPECT_EQ(p.cubTemp, 17408u);
    EXPECT_EQ(prefillWorkspaceBytes(3, 5, 0), 17408u + 1048576u);
    // Decode B = 3, maxBlocks 5: qNormed 3*1*4*128*2 = 3072 bytes at 0; logits [3, 5] FP32 = 60 bytes at 3072.
    DecodeWorkspaceLayout const d = decodeWorkspaceLayout(3, 5);
    EXPECT_EQ(d.qNormed, 0u);
    EXPECT_EQ(d.qNormedBytes, 3072u);
    EXPECT_EQ(d.logits, 3072u);
    EXPECT_EQ(d.logitsBytes, 60u);
    EXPECT_EQ(decodeWorkspaceBytes(3, 5), 3072u + 128u);
    EXPECT_THROW(prefillWorkspaceLayout(0, 5), std::runtime_error);
    EXPECT_THROW(decodeWorkspaceLayout(3, 0), std::runtime_error);
}

TEST(GoldenWorkspace, ChunkRows) {
    // Rc = min(B*S, max(8388608 / MB, 256)).
    EXPECT_EQ(prefillChunkRows(1, 8), 8);         // MB 2: min(8, 4194304)
    EXPECT_EQ(prefillChunkRows(4, 131072), 256);  // MB 32768: 8388608 / 32768 = 256
    EXPECT_EQ(prefillChunkRows(4, 65536), 512);   // MB 16384: 512
    EXPECT_EQ(prefillChunkRows(1, 1048576), 256); // MB 262144: 32 < 256
    EXPECT_EQ(prefillChunkRows(3, 4097), 8184);   // MB 1025: 8388608 / 1025 = 8184 (integer division) < 12291
}

} // namespace
} // namespace ref
} // namespace qsa

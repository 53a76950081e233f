// K2 scores (launchQsaScores) and idsFill against the reference, bit for bit, half and bf16 (contract
// section 4): visible logits relu-summed over 4 heads, everything else -FLT_MAX and never read; rows
// [rowBegin, rowEnd) only.
#include <memory>

#include "kernels/qsaTestHooks.h"
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

QSA_DTYPE_TEST_SUITE(ScoresTest);

struct SCase {
    int32_t B, S;
    std::vector<int32_t> ctx;
    int32_t rowBegin, rowEnd; // rowEnd < 0: B * S
    Mode qMode, kMode;
    size_t offsetElems = 0; // qNormed and kbar placed this many T past an aligned base (1: 2-byte aligned only)
};

template <typename P, typename T = typename P::T>
void runCase(SCase k, uint64_t seed) {
    DType const dt = P::kDt;
    int32_t const MB = (k.S + 3) / 4;
    if (k.rowEnd < 0)
        k.rowEnd = k.B * k.S;
    Rng rng(seed);
    std::vector<uint16_t> q = randomT(dt, size_t(k.B) * k.S * ref::kNumHeads * ref::kHeadDim, k.qMode, rng);
    std::vector<uint16_t> kb = randomT(dt, size_t(k.B) * MB * ref::kHeadDim, k.kMode, rng);
    // Padded q rows and kbar rows of invalid blocks hold NaN: invisible entries must read nothing.
    for (int32_t b = 0; b < k.B; ++b) {
        int32_t c = std::min(std::max(k.ctx[b], 0), k.S);
        for (size_t i = size_t(b * k.S + c) * 512; i < size_t(b + 1) * k.S * 512; ++i)
            q[i] = tNaN(dt, int(i));
        for (size_t i = (size_t(b) * MB + c / 4) * 128; i < size_t(b + 1) * MB * 128; ++i)
            kb[i] = tNaN(dt, int(i));
    }
    std::string p =
        params(dtName(dt), " B=", k.B, " S=", k.S, " MB=", MB, " ctx=", ctxStr(k.ctx), " rows=[", k.rowBegin, ",",
               k.rowEnd, ") q=", modeName(k.qMode), " kbar=", modeName(k.kMode), " offset=", k.offsetElems,
               " narrowTiles=", kn::qsa_test::narrowScoresTilesFlag().load(), " seed=", seed);
    SCOPED_TRACE(p);
    size_t n = size_t(k.rowEnd - k.rowBegin) * MB;
    std::vector<float> expect(n, bitsFloat(0x7FC12345u));
    ref::scores(dt, expect.data(), q.data(), kb.data(), k.ctx.data(), k.B, k.S, k.rowBegin, k.rowEnd);
    // A leading pad of offsetElems T puts both inputs at that offset from the allocation's alignment.
    q.insert(q.begin(), k.offsetElems, uint16_t{0x7E00});
    kb.insert(kb.begin(), k.offsetElems, uint16_t{0x7E00});
    DevBuf<uint16_t> dq(q), dk(kb);
    DevBuf<int32_t> dCtx(k.ctx);
    DevBuf<float> out(std::vector<float>(n, bitsFloat(0x7FC12345u)));
    onStream([&](cudaStream_t stream) {
        kn::launchQsaScores<T>(out.get(), dq.as<T const>() + k.offsetElems, dk.as<T const>() + k.offsetElems,
                               dCtx.get(), k.B, k.S, k.rowBegin, k.rowEnd, stream);
    });
    EXPECT_TRUE(bitsEqual(expect, out.download(), {"logits", p, size_t(MB), dt}));
}

TYPED_TEST(ScoresTest, SmallContexts) {
    std::vector<int32_t> small = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, -1};
    uint64_t seed = 1;
    for (Mode m : {Mode::kNormal, Mode::kLowEntropy, Mode::kSpecial, Mode::kWide}) {
        runCase<TypeParam>({12, 11, small, 0, -1, m, m}, seed++);
    }
}

TYPED_TEST(ScoresTest, AroundBudget) {
    std::vector<int32_t> around = {2047, 2048, 2049, 2050, 2051, 2052, 2053};
    runCase<TypeParam>({7, 2053, around, 0, -1, Mode::kNormal, Mode::kNormal}, 10);
    // Many equal logits (ties for the sort) and +0.0 logits from relu.
    runCase<TypeParam>({2, 2053, {2053, 2045}, 0, -1, Mode::kLowEntropy, Mode::kLowEntropy}, 11);
    // Positive inputs: every dot product positive, large sums.
    runCase<TypeParam>({1, 2050, {2050}, 0, -1, Mode::kPositive, Mode::kPositive}, 12);
}

TYPED_TEST(ScoresTest, RowChunks) {
    // Chunks of rows as the prefill's Rc loop uses them, boundaries inside sequences.
    std::vector<int32_t> ctx = {1030, 999, 1001};
    uint64_t seed = 20;
    for (auto r : std::vector<std::pair<int, int>>{{0, 1000}, {1000, 2061}, {2061, 3003}, {517, 518}, {3002, 3003}}) {
        runCase<TypeParam>({3, 1001, ctx, r.first, r.second, Mode::kSpecial, Mode::kNormal}, seed++);
    }
}

TYPED_TEST(ScoresTest, OverflowToInf) {
    // Large T values: dot products overflow FP32 to inf, inf - inf gives NaN: relu maps NaN to +0.0.
    runCase<TypeParam>({2, 301, {301, 150}, 0, -1, Mode::kSpecial, Mode::kSpecial}, 30);
    runCase<TypeParam>({2, 301, {301, 150}, 0, -1, Mode::kWide, Mode::kSpecial}, 31);
}

// K2 stages its inputs with 8-byte loads when both pointers allow it; a public-launcher caller may pass
// pointers that are only 2-byte aligned (natural for T): the 2-byte load path must give the same bits.
TYPED_TEST(ScoresTest, TwoByteAlignedInputs) {
    std::vector<int32_t> ctx = {300, 97, 0};
    runCase<TypeParam>({3, 300, ctx, 0, -1, Mode::kNormal, Mode::kLowEntropy, 1}, 40);
    runCase<TypeParam>({3, 300, ctx, 250, 777, Mode::kSpecial, Mode::kNormal, 3}, 41);
}

// A CTA covers 64 rows x 64 blocks as two sub-tiles of 32 blocks that share one staged q head; rows that see
// 33..64 blocks of a tile use both, rows that see <= 32 only the first. The narrow-tile path (CTAs of 32
// blocks, for devices with less shared memory) is forced here by the test hook so that every device tests it.
TYPED_TEST(ScoresTest, WideAndNarrowTiles) {
    std::vector<int32_t> ctx = {517, 130, 259};
    for (int narrow = 0; narrow < 2; ++narrow) {
        std::unique_ptr<kn::qsa_test::ScopedNarrowScoresTiles> hook;
        if (narrow) {
            hook = std::make_unique<kn::qsa_test::ScopedNarrowScoresTiles>();
        }
        runCase<TypeParam>({3, 517, ctx, 0, -1, Mode::kNormal, Mode::kNormal}, 50 + narrow);
        runCase<TypeParam>({3, 517, ctx, 100, 1300, Mode::kLowEntropy, Mode::kSpecial}, 52 + narrow);
        runCase<TypeParam>({1, 2053, {2053}, 0, -1, Mode::kWide, Mode::kNormal, 1}, 54 + narrow);
    }
}

#if !defined(QSA_SIMT) // idsFill lives in sort.cu (CUB), which testing/simt does not run
TEST(IdsFillTest, MatchesReference) {
    for (auto rc : std::vector<std::pair<int, int>>{{1, 1}, {3, 5}, {4096, 2048}, {7, 16384}, {513, 3}}) {
        std::string p = params("numRows=", rc.first, " numBlocks=", rc.second);
        SCOPED_TRACE(p);
        size_t n = size_t(rc.first) * rc.second;
        std::vector<int32_t> expect(n + 64, -7);
        ref::idsFill(expect.data(), rc.first, rc.second);
        DevBuf<int32_t> out(std::vector<int32_t>(n + 64, -7));
        onStream([&](cudaStream_t stream) { kn::launchQsaIdsFill(out.get(), rc.first, rc.second, stream); });
        EXPECT_TRUE(bitsEqual(expect, out.download(), {"ids", p, size_t(rc.second)}));
    }
}

#endif

} // namespace
} // namespace ktest
} // namespace qsa

// K2 scores (launchQsaScores) and idsFill against the reference, bit for bit, half and bf16 (contract
// section 4): visible logits relu-summed over 4 heads, everything else -FLT_MAX and never read; rows
// [rowBegin, rowEnd) only.
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
               k.rowEnd, ") q=", modeName(k.qMode), " kbar=", modeName(k.kMode), " seed=", seed);
    SCOPED_TRACE(p);
    size_t n = size_t(k.rowEnd - k.rowBegin) * MB;
    std::vector<float> expect(n, bitsFloat(0x7FC12345u));
    ref::scores(dt, expect.data(), q.data(), kb.data(), k.ctx.data(), k.B, k.S, k.rowBegin, k.rowEnd);
    DevBuf<uint16_t> dq(q), dk(kb);
    DevBuf<int32_t> dCtx(k.ctx);
    DevBuf<float> out(std::vector<float>(n, bitsFloat(0x7FC12345u)));
    onStream([&](cudaStream_t stream) {
        kn::launchQsaScores<T>(out.get(), dq.as<T const>(), dk.as<T const>(), dCtx.get(), k.B, k.S, k.rowBegin,
                               k.rowEnd, stream);
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

} // namespace
} // namespace ktest
} // namespace qsa

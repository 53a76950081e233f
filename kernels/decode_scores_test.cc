// B2 decode scores (launchQsaDecodeScores) against reference decodeScores, bit for bit, half and bf16
// (contract section 5): logits for g < ctx/4 from the V-tails (a hole reads +0.0), K2 numerics; only the
// valid prefix of each row is written; invalid rows write nothing.
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

QSA_DTYPE_TEST_SUITE(DecodeScoresTest);

template <typename P, typename T = typename P::T>
void runCase(std::vector<int32_t> const& ctx, int32_t maxBlocks, ref::PoolDims dims, Pages pages, Mode qMode,
             Mode poolMode, uint64_t seed) {
    DType const dt = P::kDt;
    int32_t const B = static_cast<int32_t>(ctx.size());
    Rng rng(seed);
    std::vector<uint16_t> q = randomT(dt, size_t(B) * ref::kNumHeads * ref::kHeadDim, qMode, rng);
    ref::HostPool hp = makeHostPool(dt, B, dims, pages, rng);
    hp.data = randomT(dt, hp.data.size(), poolMode, rng);
    std::string p = params(dtName(dt), " B=", B, " ctx=", ctxStr(ctx), " maxBlocks=", maxBlocks, " ", poolParams(dims),
                           pagesName(pages), " q=", modeName(qMode), " pool=", modeName(poolMode), " seed=", seed);
    SCOPED_TRACE(p);
    size_t n = size_t(B) * maxBlocks;
    float const poison = bitsFloat(0x7FC0BEEFu);
    std::vector<float> expect(n, poison);
    DevPool dp(hp);
    ref::decodeScores(dt, expect.data(), q.data(), ctx.data(), viewOf(hp), B, maxBlocks);
    DevBuf<uint16_t> dq(q);
    DevBuf<int32_t> dCtx(ctx);
    DevBuf<float> out(std::vector<float>(n, poison));
    onStream([&](cudaStream_t stream) {
        kn::launchQsaDecodeScores<T>(out.get(), dq.as<T const>(), dCtx.get(), dp.state(), B, maxBlocks, stream);
    });
    EXPECT_TRUE(bitsEqual(expect, out.download(), {"logits", p, size_t(maxBlocks), dt}));
    EXPECT_TRUE(bitsEqual(hp.data, dp.data.download(), {"pool (read only)", p, size_t(dims.poolHeadDim), dt}));
}

// The floor edge of maxBlocks = 200: 800, 801, 803 valid (200 logits), 804, 807 invalid (nothing written).
std::vector<int32_t> const kCtx = {1, 3, 4, 7, 8, 127, 128, 129, 132, 640, 644, 700, 800, 801, 803, 804, 807, 0, -5};

TYPED_TEST(DecodeScoresTest, Modes) {
    int32_t const B = static_cast<int32_t>(kCtx.size());
    uint64_t seed = 1;
    for (Mode m : {Mode::kNormal, Mode::kLowEntropy, Mode::kSpecial, Mode::kWide, Mode::kPositive}) {
        runCase<TypeParam>(kCtx, 200, {B * 5 + 1, 5, 2, 384, 256}, Pages::kFull, m, m, seed++);
        runCase<TypeParam>(kCtx, 200, {B * 5 + 1, 5, 1, 200, 72}, Pages::kHoles, m, Mode::kNormal, seed++);
    }
}

TYPED_TEST(DecodeScoresTest, LongContext) {
    // 8192 visible blocks in one row, page table of 256 slots.
    runCase<TypeParam>({32769, 32768, 5000}, 8200, {3 * 257, 257, 1, 256, 128}, Pages::kFull, Mode::kNormal,
                       Mode::kNormal, 40);
}

} // namespace
} // namespace ktest
} // namespace qsa

// B2 decode scores (launchQsaDecodeScores) against reference decodeScores, bit for bit, half and bf16
// (contract section 5): logits for g < ctx/4 from the V-tails (a hole reads +0.0), K2 numerics; only the
// valid prefix of each row is written; invalid rows write nothing.
#include "kernels/qsaInternal.h"
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

// The decode runner's B1+B2 launch (launchDecodePrepScoresImpl: B1's q-prep in every CTA, its k path in the CTA
// that scores the completed block) against reference decodePrep then decodeScores on the pool B1 left: qNormed,
// the pool after the step and the logits' valid prefix, bit for bit. It carries B1's hooks too (26, 30, 31, 35:
// //kernels:decode_scores_simt_mutants_test).
template <typename P, typename T = typename P::T>
void runFusedCase(std::vector<int32_t> const& ctx, int32_t maxBlocks, ref::PoolDims dims, Pages pages, Mode m,
                  uint64_t seed) {
    DType const dt = P::kDt;
    int32_t const B = static_cast<int32_t>(ctx.size());
    float const eps = 1e-6f;
    Rng rng(seed);
    std::vector<uint16_t> qk = randomT(dt, size_t(B) * ref::kQkWidth, m, rng);
    std::vector<float> cs = makeCosSin(std::max(1, *std::max_element(ctx.begin(), ctx.end())));
    std::vector<uint16_t> wQ = makeGamma(dt, Gamma::kSmall, rng), wK = makeGamma(dt, Gamma::kSmall, rng);
    ref::HostPool hp = makeHostPool(dt, B, dims, pages, rng);
    std::string p = params(dtName(dt), " B=", B, " ctx=", ctxStr(ctx), " maxBlocks=", maxBlocks, " ", poolParams(dims),
                           pagesName(pages), " qk=", modeName(m), " seed=", seed);
    SCOPED_TRACE(p);
    DevPool dp(hp); // the pool BEFORE the step
    size_t const nq = size_t(B) * ref::kNumHeads * ref::kHeadDim;
    std::vector<uint16_t> expectQ(nq, 0xFFFF);
    ref::decodePrep(dt, expectQ.data(), qk.data(), cs.data(), ctx.data(), wQ.data(), wK.data(), eps, viewOf(hp), B,
                    maxBlocks); // hp is now the pool AFTER B1
    float const poison = bitsFloat(0x7FC0BEEFu);
    size_t const n = size_t(B) * maxBlocks;
    std::vector<float> expectL(n, poison);
    ref::decodeScores(dt, expectL.data(), expectQ.data(), ctx.data(), viewOf(hp), B, maxBlocks);
    DevBuf<uint16_t> dQk(qk), dWq(wQ), dWk(wK), q(nq);
    DevBuf<float> dCs(cs), out(std::vector<float>(n, poison));
    DevBuf<int32_t> dCtx(ctx);
    q.fillBytes(0xFF);
    onStream([&](cudaStream_t stream) {
        kn::qsa_detail::launchDecodePrepScoresImpl<T>("test", q.as<T>(), out.get(), dQk.as<T const>(), dCs.get(),
                                                      dCtx.get(), dWq.as<T const>(), dWk.as<T const>(), eps, dp.state(),
                                                      B, maxBlocks, stream);
    });
    EXPECT_TRUE(bitsEqual(expectQ, q.download(), {"qNormed", p, ref::kHeadDim, dt}));
    EXPECT_TRUE(bitsEqual(hp.data, dp.data.download(), {"pool", p, size_t(dims.poolHeadDim), dt}));
    EXPECT_TRUE(bitsEqual(expectL, out.download(), {"logits", p, size_t(maxBlocks), dt}));
}

// Every ctx % 4; the completed block in tile 0 (ctx 4, 512: block 127, the tile's last), tile 1 (516, 1024) and
// tile 2 (1028, 1200 = 4 maxBlocks); nVis 0 (ctx 1..3: only the first CTA, q and the raw k); the floor edge
// (1200..1203 valid, 1204, 1207 invalid); ctx < 1; past the page table (1300 with 10 pages of 128 tokens).
std::vector<int32_t> const kFusedCtx = {1,   2,   3,    4,    5,    127,  128,  129,  512,  513,  516, 640,
                                        644, 700, 1024, 1027, 1028, 1200, 1201, 1203, 1204, 1207, 0,   -3};

TYPED_TEST(DecodeScoresTest, FusedWithPrep) {
    int32_t const B = static_cast<int32_t>(kFusedCtx.size());
    uint64_t seed = 100;
    for (Mode m : {Mode::kNormal, Mode::kLowEntropy, Mode::kSpecial}) {
        runFusedCase<TypeParam>(kFusedCtx, 300, {B * 10 + 2, 10, 2, 384, 256}, Pages::kFull, m, seed++);
        runFusedCase<TypeParam>(kFusedCtx, 300, {B * 10 + 2, 10, 1, 203, 75}, Pages::kHoles, m, seed++);
    }
}

// Many valid rows of ordinary values, as DecodePrepTest.ManyRowsShowEveryRoundingOrder (mutant 31's reordered sum
// of squares shows only now and then).
TYPED_TEST(DecodeScoresTest, FusedManyRows) {
    std::vector<int32_t> ctx(1200);
    for (size_t i = 0; i < ctx.size(); ++i)
        ctx[i] = 1 + static_cast<int32_t>((i * 7) % 128);
    int32_t const B = static_cast<int32_t>(ctx.size());
    runFusedCase<TypeParam>(ctx, 40, {B + 2, 1, 1, 200, 72}, Pages::kFull, Mode::kNormal, 130);
}

} // namespace
} // namespace ktest
} // namespace qsa

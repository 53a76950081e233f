// K1b k-compress (dense and paged) and the raw-k tail scatter against the reference stages, bit for bit,
// half and bf16 (contract sections 3-5): block g valid iff 4g + 3 < ctx (and inside the chunk
// [pastLen, pastLen + S)); invalid blocks are exact zeros; blocks outside [blockBegin, blockEnd) and every
// pool cell other than the V-tails of valid blocks / K-tails of the trailing tokens stay untouched.
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

QSA_DTYPE_TEST_SUITE(KCompressTest);

struct KCase {
    int32_t B, S;
    std::vector<int32_t> ctx;
    int32_t pastLen;
    int32_t blockBegin, blockEnd; // blockEnd < 0: numBlocks
    Mode qk;
    Gamma gamma;
};

// Dense launcher, and the paged one on a pool when `paged`.
template <typename P, typename T = typename P::T>
void runCase(KCase k, bool paged, Pages pages, uint64_t seed) {
    DType const dt = P::kDt;
    int32_t const numBlocks = (k.pastLen + k.S + 3) / 4;
    if (k.blockEnd < 0)
        k.blockEnd = numBlocks;
    Rng rng(seed);
    std::vector<uint16_t> qk = randomT(dt, size_t(k.B) * k.S * ref::kQkWidth, k.qk, rng);
    // Tokens of a sequence at or after ctx are padding: never read (contract section 4, K1b).
    std::vector<int32_t> rowsCtx(k.ctx.size());
    for (size_t b = 0; b < k.ctx.size(); ++b)
        rowsCtx[b] = std::max(0, k.ctx[b] - k.pastLen);
    poisonPaddedRows(dt, qk, k.B, k.S, rowsCtx);
    std::vector<float> cosSin = makeCosSin(k.pastLen + k.S);
    std::vector<uint16_t> wK = makeGamma(dt, k.gamma, rng);
    float const eps = 1e-6f;
    ref::PoolDims dims{k.B * 6 + 3, 6, 2, 384, 256};
    ref::HostPool hp = makeHostPool(dt, k.B, dims, pages, rng);
    std::string p = params(dtName(dt), " B=", k.B, " S=", k.S, " ctx=", ctxStr(k.ctx), " pastLen=", k.pastLen,
                           " numBlocks=", numBlocks, " blocks=[", k.blockBegin, ",", k.blockEnd,
                           ") qk=", modeName(k.qk), " gamma=", gammaName(k.gamma)) +
                    (paged ? " paged " + poolParams(dims) : " dense") + (pages == Pages::kHoles ? " holes" : "") +
                    params(" seed=", seed);
    SCOPED_TRACE(p);

    size_t n = size_t(k.B) * numBlocks * ref::kHeadDim;
    std::vector<uint16_t> expect(n, 0xFFFF);
    DevBuf<uint16_t> dQk(qk), dW(wK), out(n);
    DevBuf<float> dCs(cosSin);
    DevBuf<int32_t> dCtx(k.ctx);
    out.fillBytes(0xFF);
    DevPool dp(hp);
    if (paged) {
        ref::kCompressPaged(dt, expect.data(), qk.data(), cosSin.data(), k.ctx.data(), wK.data(), eps, k.B, k.S,
                            numBlocks, k.blockBegin, k.blockEnd, k.pastLen, viewOf(hp));
    } else {
        ref::kCompress(dt, expect.data(), qk.data(), cosSin.data(), k.ctx.data(), wK.data(), eps, k.B, k.S, numBlocks,
                       k.blockBegin, k.blockEnd, k.pastLen);
    }
    onStream([&](cudaStream_t stream) {
        if (paged) {
            kn::launchQsaKCompressPaged<T>(out.as<T>(), dQk.as<T const>(), dCs.get(), dCtx.get(), dW.as<T const>(), eps,
                                           k.B, k.S, numBlocks, k.blockBegin, k.blockEnd, k.pastLen, dp.state(),
                                           stream);
        } else {
            kn::launchQsaKCompress<T>(out.as<T>(), dQk.as<T const>(), dCs.get(), dCtx.get(), dW.as<T const>(), eps, k.B,
                                      k.S, numBlocks, k.blockBegin, k.blockEnd, k.pastLen, stream);
        }
    });
    EXPECT_TRUE(bitsEqual(expect, out.download(), {"kbar", p, ref::kHeadDim, dt}));
    // The dense launcher touches no pool cell; the paged one only V-tails of valid blocks.
    EXPECT_TRUE(bitsEqual(hp.data, dp.data.download(), {"pool", p, size_t(dims.poolHeadDim), dt}));
}

std::vector<int32_t> const kSmall = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, -4};

std::vector<KCase> cases() {
    return {
        {12, 9, kSmall, 0, 0, -1, Mode::kNormal, Gamma::kSmall},
        {12, 9, kSmall, 0, 0, -1, Mode::kSpecial, Gamma::kExtreme},
        {7, 2053, {2047, 2048, 2049, 2050, 2051, 2052, 2053}, 0, 0, -1, Mode::kNormal, Gamma::kSmall},
        {2, 2053, {2053, 2046}, 0, 100, 400, Mode::kLowEntropy, Gamma::kSmall}, // a block range
        {2, 2053, {2053, 2046}, 0, 511, 513, Mode::kWide, Gamma::kSpecial},     // around block 512
        {3, 13, {21, 10, 19}, 8, 0, -1, Mode::kNormal, Gamma::kSmall},          // pastLen > 0
        {2, 11, {17, 14}, 6, 1, 4, Mode::kNormal, Gamma::kExtreme},             // pastLen % 4 != 0
        {2, 645, {645, 300}, 0, 0, -1, Mode::kSpecial, Gamma::kSmall},          // crosses pages 0..5
    };
}

TYPED_TEST(KCompressTest, Dense) {
    uint64_t seed = 100;
    for (KCase const& k : cases())
        runCase<TypeParam>(k, false, Pages::kFull, seed++);
}

// The paged launcher on every case that fits the table (6 slots of 128 tokens), seeds from `seed`.
template <typename P>
void pagedCases(Pages pages, uint64_t seed) {
    for (KCase const& k : cases()) {
        if (k.pastLen + k.S <= 6 * 128)
            runCase<P>(k, true, pages, seed++);
    }
}

TYPED_TEST(KCompressTest, PagedFullTable) {
    pagedCases<TypeParam>(Pages::kFull, 200);
}

TYPED_TEST(KCompressTest, PagedHolesNeverDereferenced) {
    pagedCases<TypeParam>(Pages::kHoles, 300);
    // Sequences longer than maxPagesPerSeq * 128: slot indices past the table are dropped.
    runCase<TypeParam>({2, 1001, {1001, 800}, 0, 0, -1, Mode::kNormal, Gamma::kSmall}, true, Pages::kHoles, 399);
}

// Raw-k tail scatter: raw k of tokens [ctx - ctx % 4, ctx) to their K-tails, bit-unmodified.
template <typename P, typename T = typename P::T>
void runScatter(int32_t B, int32_t S, std::vector<int32_t> ctx, Pages pages, ref::PoolDims dims, uint64_t seed) {
    DType const dt = P::kDt;
    Rng rng(seed);
    std::vector<uint16_t> qk = randomT(dt, size_t(B) * S * ref::kQkWidth, Mode::kSpecial, rng);
    poisonPaddedRows(dt, qk, B, S, ctx);
    ref::HostPool hp = makeHostPool(dt, B, dims, pages, rng);
    std::string p = params(dtName(dt), " B=", B, " S=", S, " ctx=", ctxStr(ctx), " ", poolParams(dims),
                           pagesName(pages), " seed=", seed);
    SCOPED_TRACE(p);
    DevBuf<uint16_t> dQk(qk);
    DevBuf<int32_t> dCtx(ctx);
    DevPool dp(hp);
    ref::rawKTailScatter(dt, qk.data(), ctx.data(), B, S, viewOf(hp));
    onStream([&](cudaStream_t stream) {
        kn::launchQsaRawKTailScatter<T>(dQk.as<T const>(), dCtx.get(), B, S, dp.state(), stream);
    });
    EXPECT_TRUE(bitsEqual(hp.data, dp.data.download(), {"pool", p, size_t(dims.poolHeadDim), dt}));
}

TYPED_TEST(KCompressTest, RawKTailScatter) {
    runScatter<TypeParam>(12, 9, kSmall, Pages::kFull, {12 * 2 + 1, 2, 2, 384, 256}, 1);
    runScatter<TypeParam>(12, 9, kSmall, Pages::kHoles, {12 * 2 + 1, 2, 1, 200, 64}, 2);
    std::vector<int32_t> around = {2047, 2048, 2049, 2050, 2051, 2052, 2053};
    runScatter<TypeParam>(7, 2053, around, Pages::kFull, {7 * 17, 17, 2, 384, 256}, 3);
    runScatter<TypeParam>(7, 2053, around, Pages::kHoles, {7 * 17, 17, 2, 384, 256}, 4);
    // Table shorter than the sequence: slots >= maxPagesPerSeq are never dereferenced.
    runScatter<TypeParam>(3, 2053, {2051, 1027, 130}, Pages::kFull, {3 * 8, 8, 2, 384, 256}, 5);
}

} // namespace
} // namespace ktest
} // namespace qsa

// K1a q-prep (launchQsaQPrep) against reference qPrep, bit for bit, half and bf16 (contract section 4:
// normRope per head at pos = t; rows t >= ctx are exact zeros and never read).
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

QSA_DTYPE_TEST_SUITE(QPrepTest);

struct QCase {
    int32_t B, S;
    std::vector<int32_t> ctx;
    Mode qk;
    Gamma gamma;
    float eps;
};

template <typename P, typename T = typename P::T>
void runCase(QCase const& q, uint64_t seed) {
    DType const dt = P::kDt;
    PrefillSpec s = prefillSpec(q.B, q.S, q.ctx, seed, q.qk);
    s.gamma = q.gamma;
    s.rmsEps = q.eps;
    std::string p = specStr(dt, s);
    SCOPED_TRACE(p);
    ref::PrefillCase c = makePrefillCase(dt, s);
    size_t n = size_t(q.B) * q.S * ref::kNumHeads * ref::kHeadDim;

    std::vector<uint16_t> expect(n, 0xFFFF); // same poison as the device buffer: every cell must be written
    ref::qPrep(dt, expect.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wQ.data(), c.rmsEps,
               q.B, q.S);

    DevBuf<uint16_t> qk(c.indexQk), wQ(c.wQ), out(n);
    DevBuf<float> cs(c.cosSin);
    DevBuf<int32_t> ctx(c.contextLengths);
    out.fillBytes(0xFF);
    onStream([&](cudaStream_t stream) {
        kn::launchQsaQPrep<T>(out.as<T>(), qk.as<T const>(), cs.get(), ctx.get(), wQ.as<T const>(), c.rmsEps, q.B, q.S,
                              stream);
    });
    EXPECT_TRUE(bitsEqual(expect, out.download(), {"qNormed", p, ref::kHeadDim, dt}));
}

TYPED_TEST(QPrepTest, SmallContextsAndPadding) {
    // ctx = 0..9 on S = 9 (ctx = 9 is full, 10 clamps), plus out-of-range ctx (clamped to [0, S]).
    std::vector<int32_t> ctx = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -3, 1000};
    for (Mode m : {Mode::kNormal, Mode::kSpecial, Mode::kLowEntropy}) {
        runCase<TypeParam>({13, 9, ctx, m, Gamma::kSmall, 1e-6f}, 11);
    }
}

TYPED_TEST(QPrepTest, AroundBudgetAndOddS) {
    runCase<TypeParam>({4, 2053, {2047, 2053, 2050, 2048}, Mode::kNormal, Gamma::kSmall, 1e-6f}, 12);
    runCase<TypeParam>({2, 4099, {4099, 1}, Mode::kWide, Gamma::kSmall, 1e-5f}, 13);
}

TYPED_TEST(QPrepTest, ExtremeGammasOverflowToInf) {
    for (Gamma g : {Gamma::kExtreme, Gamma::kSpecial}) {
        for (Mode m : {Mode::kNormal, Mode::kWide, Mode::kSpecial}) {
            runCase<TypeParam>({3, 37, {37, 30, 5}, m, g, 1e-6f}, 14);
        }
    }
}

TYPED_TEST(QPrepTest, AnyRmsEps) {
    // rmsEps may be any float: 1/sqrt of 0, negative, inf, NaN and subnormal inputs follow IEEE.
    float const eps[] = {
        0.0f,   -0.0f,  -1.0f, 1e30f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
        1e-45f, -1e-38f};
    for (float e : eps) {
        for (Mode m : {Mode::kNormal, Mode::kLowEntropy}) {
            runCase<TypeParam>({2, 13, {13, 7}, m, Gamma::kSmall, e}, 15);
        }
    }
}

} // namespace
} // namespace ktest
} // namespace qsa

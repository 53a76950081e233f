// The vectorized K2 engine (k2.cc, every instruction-set variant this CPU runs) against the scalar
// contract order (numerics: headDot = per-lane fma chains + warpSum, logitOf = relu sum * 0x3DB504F3),
// on random T values including NaN, Inf, subnormals and signed zeros; a visible logit is never NaN or -0.0.
#include "reference/k2.h"
#include "reference/numerics.h"
#include "reference/rowops.h"
#include "reference/stages.h"
#include "testing/rng.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

namespace qsa {
namespace ref {
namespace {

using Rng = testlib::Rng;

// Mostly bell-shaped values in (-3, 3) (a sum of three uniforms: mean 0, variance 1) cast to T; `specialPct` percent
// raw 16-bit patterns (NaN, Inf, subnormals, -0).
std::vector<uint16_t> randomT(DType dt, size_t n, Rng& rng, int specialPct) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) {
        if (rng.below(100) < specialPct) {
            x = static_cast<uint16_t>(rng.next() >> 48);
        } else {
            float const a = rng.uniform(-1.0f, 1.0f), b = rng.uniform(-1.0f, 1.0f), c = rng.uniform(-1.0f, 1.0f);
            x = fromFloat(dt, a + b + c);
        }
    }
    return v;
}

float scalarLogit(DType dt, uint16_t const* q, uint16_t const* k) {
    float kf[128];
    toFloats(dt, k, kf);
    float dot[4];
    for (int h = 0; h < 4; ++h) {
        float qf[128];
        toFloats(dt, q + h * 128, qf);
        dot[h] = headDot(qf, kf);
    }
    return logitOf(dot);
}

class K2Variants : public ::testing::TestWithParam<int> {
protected:
    void TearDown() override { k2ForceVariant(nullptr); }
};

TEST_P(K2Variants, EveryVariantEqualsTheScalarOrder) {
    Rng rng(1234 + GetParam());
    DType const dt = GetParam() % 2 ? DType::kBf16 : DType::kHalf;
    int const specialPct = GetParam() < 2 ? 0 : (GetParam() < 6 ? 3 : 30);
    int32_t const numBlocks = 37; // not a multiple of 16: a partial last tile
    std::vector<uint16_t> kbar = randomT(dt, static_cast<size_t>(numBlocks) * 128, rng, specialPct);
    std::vector<uint16_t> q = randomT(dt, 4 * 512, rng, specialPct);
    KbarTiles const tiles = makeKbarTiles(dt, kbar.data(), numBlocks);
    int32_t const nVis[4] = {37, 0, 16, 5};
    uint16_t const* qp[4] = {q.data(), q.data() + 512, q.data() + 1024, q.data() + 1536};
    for (char const* variant : k2Variants()) {
        k2ForceVariant(variant);
        std::vector<float> out(4 * 40, 123.0f);
        float* op[4] = {out.data(), out.data() + 40, out.data() + 80, out.data() + 120};
        scoreRows(dt, qp, nVis, 4, tiles, 40, op);
        int mismatches = 0;
        for (int r = 0; r < 4; ++r) {
            for (int32_t g = 0; g < 40; ++g) {
                float const want = g < nVis[r] ? scalarLogit(dt, q.data() + r * 512, kbar.data() + g * 128) : -FLT_MAX;
                float const got = out[r * 40 + g];
                // Contract consequence: a visible logit is +0.0, positive or +inf, even with NaN / Inf inputs.
                if (floatBits(got) != floatBits(want) || (g < nVis[r] && (std::isnan(got) || std::signbit(got)))) {
                    ++mismatches;
                }
            }
        }
        EXPECT_EQ(mismatches, 0) << "variant " << variant;
    }
}

// Seeds 6 and 7: 30% special inputs (NaN / Inf everywhere) in both T.
INSTANTIATE_TEST_SUITE_P(Seeds, K2Variants, ::testing::Range(0, 8));

TEST(K2Engine, ScoresStageRowRangesAndThreadCounts) {
    // The scores stage over any row range and thread count equals the scalar order; padded rows -FLT_MAX.
    Rng rng(7);
    DType const dt = DType::kBf16;
    int32_t const B = 2;
    int32_t const S = 23;
    int32_t const mb = 6;
    std::vector<uint16_t> q = randomT(dt, static_cast<size_t>(B) * S * 512, rng, 1);
    std::vector<uint16_t> kbar = randomT(dt, static_cast<size_t>(B) * mb * 128, rng, 1);
    std::vector<int32_t> const ctx = {23, 14};
    for (int threads : {1, 3}) {
        for (auto range : {std::pair<int, int>{0, 46}, std::pair<int, int>{5, 31}, std::pair<int, int>{22, 24}}) {
            std::vector<float> logits(static_cast<size_t>(range.second - range.first) * mb, 1.0f);
            scores(dt, logits.data(), q.data(), kbar.data(), ctx.data(), B, S, range.first, range.second, threads);
            for (int r = range.first; r < range.second; ++r) {
                int const b = r / S;
                int const t = r % S;
                int const nVis = t < ctx[b] ? (t + 1) / 4 : 0;
                for (int g = 0; g < mb; ++g) {
                    float const want =
                        g < nVis ? scalarLogit(dt, q.data() + r * 512, kbar.data() + (b * mb + g) * 128) : -FLT_MAX;
                    ASSERT_EQ(floatBits(logits[(r - range.first) * mb + g]), floatBits(want))
                        << "r=" << r << " g=" << g << " threads=" << threads;
                }
            }
        }
    }
}

} // namespace
} // namespace ref
} // namespace qsa

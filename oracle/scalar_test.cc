// The oracle's hot loop, logit(), sums each head's lanes with the lane-0 cone of the butterfly (scalar.cc,
// butterflyLane0). Here it is compared bit for bit with section 4's K2 logit written with the full
// butterfly (warpSum) on random q / kbar of mixed magnitudes, signs, zeros, subnormals, infinities and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "oracle/scalar.h"
#include "testing/rng.h"

namespace qsa {
namespace oracle {
namespace {

float contractLogit(float const q[kHeads * kDim], float const kbar[kDim]) {
    float dot[kHeads];
    for (int h = 0; h < kHeads; ++h) {
        float partial[kLanes];
        for (int l = 0; l < kLanes; ++l) {
            partial[l] = 0.0f;
            for (int i = 0; i < 4; ++i)
                partial[l] = std::fma(q[h * kDim + l + 32 * i], kbar[l + 32 * i], partial[l]);
        }
        dot[h] = warpSum(partial);
    }
    float const s = ((relu(dot[0]) + relu(dot[1])) + relu(dot[2])) + relu(dot[3]);
    return s * bitsFloat(0x3DB504F3u);
}

// One input of the given mode, drawn with the portable generator (testing/rng.h), so that the cases are the same
// with any standard library.
float draw(testlib::Rng& rng, int mode) {
    switch (mode) {
    case 0:
        return rng.uniform(-1.0f, 1.0f);
    case 1: // wide exponent range, subnormals included
        return std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.below(280)) - 150);
    case 2: { // specials now and then (one draw in four)
        static float const kSpecials[] = {std::numeric_limits<float>::infinity(),
                                          -std::numeric_limits<float>::infinity(),
                                          std::numeric_limits<float>::quiet_NaN(), -0.0f};
        if (rng.below(4) == 0)
            return rng.choice(kSpecials);
        return rng.uniform(-1.0f, 1.0f) * 1e30f;
    }
    default: // all positive: large sums, ties of rounding
        return std::fabs(rng.uniform(-1.0f, 1.0f)) * 8.0f;
    }
}

TEST(OracleScalar, LogitLane0ConeEqualsFullButterfly) {
    uint64_t const kSeed = 20261201;
    testlib::Rng rng(kSeed);
    float q[kHeads * kDim], k[kDim];
    int64_t cases = 0, nonzero = 0, subnormalInputs = 0, nanInputs = 0, infLogits = 0;
    for (int n = 0; n < 20000; ++n) {
        int const mode = n % 4;
        for (float& x : q)
            x = draw(rng, mode);
        for (float& x : k)
            x = draw(rng, mode);
        for (float const x : k) {
            subnormalInputs += std::fpclassify(x) == FP_SUBNORMAL ? 1 : 0;
            nanInputs += std::isnan(x) ? 1 : 0;
        }
        float const got = logit(q, k), want = contractLogit(q, k);
        ASSERT_EQ(floatBits(got), floatBits(want))
            << "seed " << kSeed << " case " << n << " mode " << mode << ": " << got << " vs " << want;
        ++cases;
        nonzero += got != 0.0f ? 1 : 0;
        infLogits += std::isinf(want) ? 1 : 0;
    }
    // Not vacuous: most logits are not the relu floor (NaN sums land there too), mode 1 draws subnormals, mode 2's
    // specials are drawn (NaN comes from them alone), and some logits are infinite (28 of 20000 with this seed).
    EXPECT_GT(nonzero, cases / 4);
    EXPECT_GT(subnormalInputs, 0);
    EXPECT_GT(nanInputs, 0);
    EXPECT_GT(infLogits, 0);
}

} // namespace
} // namespace oracle
} // namespace qsa

// The oracle's hot loop, logit(), sums each head's lanes with the lane-0 cone of the butterfly (scalar.cc,
// butterflyLane0). Here it is compared bit for bit with section 4's K2 logit written with the full
// butterfly (warpSum) on random q / kbar of mixed magnitudes, signs, zeros, subnormals, infinities and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "oracle/scalar.h"

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
    return s * floatOf(0x3DB504F3u);
}

float draw(std::mt19937_64& rng, int mode) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    switch (mode) {
    case 0:
        return u(rng);
    case 1: // wide exponent range, subnormals included
        return std::ldexp(u(rng), int(rng() % 280) - 150);
    case 2: { // specials now and then
        uint64_t const r = rng() % 16;
        if (r == 0)
            return std::numeric_limits<float>::infinity();
        if (r == 1)
            return -std::numeric_limits<float>::infinity();
        if (r == 2)
            return std::numeric_limits<float>::quiet_NaN();
        if (r == 3)
            return -0.0f;
        return u(rng) * 1e30f;
    }
    default: // all positive: large sums, ties of rounding
        return std::fabs(u(rng)) * 8.0f;
    }
}

TEST(OracleScalar, LogitLane0ConeEqualsFullButterfly) {
    std::mt19937_64 rng(20261201);
    float q[kHeads * kDim], k[kDim];
    int64_t cases = 0, nonzero = 0;
    for (int n = 0; n < 20000; ++n) {
        int const mode = n % 4;
        for (float& x : q)
            x = draw(rng, mode);
        for (float& x : k)
            x = draw(rng, mode);
        float const got = logit(q, k), want = contractLogit(q, k);
        ASSERT_EQ(bitsOf(got), bitsOf(want)) << "case " << n << " mode " << mode << ": " << got << " vs " << want;
        ++cases;
        nonzero += got != 0.0f ? 1 : 0;
    }
    EXPECT_GT(nonzero, cases / 4); // not vacuous: most logits are not the relu floor
}

} // namespace
} // namespace oracle
} // namespace qsa

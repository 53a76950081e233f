// Scalar primitives of the `ieee` profile (contract section 4): RNE casts, correctly rounded 1/sqrt,
// relu, the butterfly, normRope's fma/product/rope order. Every expected value is derived in the comment
// beside it (exact binary arithmetic), not computed by the reference.
#include "reference/independent.h"
#include "reference/numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <limits>

namespace qsa {
namespace ref {
namespace {

float f(uint32_t bits) {
    return bitsFloat(bits);
}
float p2(int e) {
    return std::ldexp(1.0f, e);
}

// ---- casts to half ------------------------------------------------------------------------------

TEST(CastHalf, RoundsToNearestEvenOnHalfwayCases) {
    EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
    // 1 + 2^-11 is halfway between 1 (0x3C00, even) and 1 + 2^-10 (0x3C01): even wins.
    EXPECT_EQ(floatToHalf(1.0f + p2(-11)), 0x3C00);
    // 1 + 3*2^-11 is halfway between 0x3C01 (odd) and 0x3C02 (even).
    EXPECT_EQ(floatToHalf(1.0f + 3 * p2(-11)), 0x3C02);
    // Just above the halfway point rounds up.
    EXPECT_EQ(floatToHalf(1.0f + p2(-11) + p2(-23)), 0x3C01);
    // Just below the halfway point 1 + 3*2^-11 rounds down.
    EXPECT_EQ(floatToHalf(1.0f + 3 * p2(-11) - p2(-23)), 0x3C01);
    EXPECT_EQ(floatToHalf(-1.0f - p2(-11)), 0xBC00);
}

TEST(CastHalf, OverflowGoesToInfinity) {
    EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF); // largest half
    // 65520 is halfway between 65504 (0x7BFF, odd) and 65536 (would be 0x7C00, even): rounds to inf.
    EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);
    EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF); // below the halfway point
    EXPECT_EQ(floatToHalf(1e6f), 0x7C00);
    EXPECT_EQ(floatToHalf(-1e6f), 0xFC00);
    EXPECT_EQ(floatToHalf(FLT_MAX), 0x7C00);
    EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(CastHalf, SubnormalsAreKept) {
    EXPECT_EQ(floatToHalf(p2(-24)), 0x0001);           // smallest half subnormal
    EXPECT_EQ(floatToHalf(p2(-25)), 0x0000);           // halfway 0 / 2^-24: even (0)
    EXPECT_EQ(floatToHalf(p2(-25) + p2(-40)), 0x0001); // above halfway
    EXPECT_EQ(floatToHalf(3 * p2(-25)), 0x0002);       // halfway 1 / 2 ulps: even (2)
    EXPECT_EQ(floatToHalf(-p2(-24)), 0x8001);
    EXPECT_EQ(floatToHalf(-p2(-26)), 0x8000); // rounds to -0
    EXPECT_EQ(floatToHalf(p2(-14)), 0x0400);  // smallest normal
    // 2^-14 - 2^-25 is halfway between 0x03FF (odd) and 0x0400 (even).
    EXPECT_EQ(floatToHalf(p2(-14) - p2(-25)), 0x0400);
    EXPECT_EQ(floatToHalf(f(0x00000001)), 0x0000); // float subnormal
    EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
}

// ---- casts to bf16 ------------------------------------------------------------------------------

TEST(CastBf16, RoundsToNearestEvenOnHalfwayCases) {
    EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
    EXPECT_EQ(floatToBf16(1.0f + p2(-8)), 0x3F80);           // halfway 0x3F80 (even) / 0x3F81
    EXPECT_EQ(floatToBf16(1.0f + 3 * p2(-8)), 0x3F82);       // halfway 0x3F81 / 0x3F82 (even)
    EXPECT_EQ(floatToBf16(1.0f + p2(-8) + p2(-23)), 0x3F81); // above halfway
    EXPECT_EQ(floatToBf16(-(1.0f + 3 * p2(-8))), 0xBF82);
}

TEST(CastBf16, OverflowGoesToInfinity) {
    // bf16 max is 0x7F7F = (2 - 2^-7) * 2^127; 0x7F7F8000 is halfway to 2^128 (inf), 0x7F7F odd -> inf.
    EXPECT_EQ(floatToBf16(f(0x7F7F7FFFu)), 0x7F7F);
    EXPECT_EQ(floatToBf16(f(0x7F7F8000u)), 0x7F80);
    EXPECT_EQ(floatToBf16(FLT_MAX), 0x7F80);
    EXPECT_EQ(floatToBf16(-FLT_MAX), 0xFF80);
    EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
}

TEST(CastBf16, SubnormalsAreKept) {
    EXPECT_EQ(floatToBf16(f(0x00010000u)), 0x0001); // smallest bf16 subnormal, 2^-133
    EXPECT_EQ(floatToBf16(f(0x00008000u)), 0x0000); // halfway 0 / 1: even
    EXPECT_EQ(floatToBf16(f(0x00008001u)), 0x0001); // above halfway
    EXPECT_EQ(floatToBf16(f(0x00018000u)), 0x0002); // halfway 1 / 2: even
    EXPECT_EQ(floatToBf16(f(0x00000001u)), 0x0000);
    EXPECT_EQ(floatToBf16(f(0x80000001u)), 0x8000);
    EXPECT_EQ(floatToBf16(f(0x007FFFFFu)), 0x0080); // largest float subnormal rounds up to the smallest normal
}

TEST(Casts, EveryNaNIsCanonical) {
    for (uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0xFFFFFFFFu}) {
        EXPECT_EQ(floatToHalf(f(bits)), 0x7FFF) << std::hex << bits;
        EXPECT_EQ(floatToBf16(f(bits)), 0x7FFF) << std::hex << bits;
    }
}

TEST(CastFromT, IsExact) {
    EXPECT_EQ(halfToFloat(0x0001), p2(-24));
    EXPECT_EQ(halfToFloat(0x8001), -p2(-24));
    EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f); // 0x155 / 1024 + 1 = 1.3330078125; * 2^-2
    EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
    EXPECT_EQ(halfToFloat(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
    EXPECT_TRUE(std::isnan(halfToFloat(0x7FFF)));
    EXPECT_EQ(floatBits(halfToFloat(0x8000)), 0x80000000u);
    EXPECT_EQ(bf16ToFloat(0x0001), p2(-133));
    EXPECT_EQ(bf16ToFloat(0x3F81), 1.0f + p2(-7));
    EXPECT_TRUE(std::isnan(bf16ToFloat(0x7FFF)));
}

// Sampled check of both casts against the integer-only implementations of independent.h (the exhaustive
// run over all 2^32 floats is //tools:exhaustive_primitives --checker=independent).
TEST(Casts, AgreeWithIndependentImplementationOnSampledFloats) {
    int bad = 0;
    for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4093) {
        float const x = f(static_cast<uint32_t>(u));
        bad += floatToHalf(x) != indep::floatToHalf(x);
        bad += floatToBf16(x) != indep::floatToBf16(x);
    }
    EXPECT_EQ(bad, 0);
}

TEST(Casts, RoundTripEveryPattern) {
    for (uint32_t h = 0; h < 65536; ++h) {
        uint16_t const b = static_cast<uint16_t>(h);
        uint16_t const wantHalf = (h & 0x7FFF) > 0x7C00 ? 0x7FFF : b;
        uint16_t const wantBf = (h & 0x7FFF) > 0x7F80 ? 0x7FFF : b;
        ASSERT_EQ(floatToHalf(halfToFloat(b)), wantHalf) << h;
        ASSERT_EQ(floatToBf16(bf16ToFloat(b)), wantBf) << h;
    }
}

// ---- correctly rounded 1/sqrt ----------------------------------------------------------------------

TEST(RsqrtRn, PowersOfTwo) {
    EXPECT_EQ(rsqrtRn(1.0f), 1.0f);
    EXPECT_EQ(rsqrtRn(4.0f), 0.5f);
    EXPECT_EQ(rsqrtRn(0.25f), 2.0f);
    EXPECT_EQ(rsqrtRn(p2(-126)), p2(63));
    EXPECT_EQ(rsqrtRn(p2(126)), p2(-63));
    EXPECT_EQ(rsqrtRn(p2(-148)), p2(74)); // subnormal input
    // Odd powers: 2^-k/sqrt(2). sqrt(1/2) = 0.70710678118..., nearest float 0x3F3504F3 (0.707106769...).
    EXPECT_EQ(floatBits(rsqrtRn(2.0f)), 0x3F3504F3u);
    // 1/sqrt(128) = 2^-3 * sqrt(1/2): same significand, exponent -4: the contract's 0x3DB504F3.
    EXPECT_EQ(floatBits(rsqrtRn(128.0f)), 0x3DB504F3u);
    // 1/sqrt(0.5) = sqrt(2) = 1.41421356..., nearest float 0x3FB504F3.
    EXPECT_EQ(floatBits(rsqrtRn(0.5f)), 0x3FB504F3u);
    // Smallest subnormal 2^-149: 1/sqrt = 2^74 * sqrt(2): significand of sqrt(2), biased exponent 127+74=201.
    EXPECT_EQ(floatBits(rsqrtRn(f(0x00000001u))), (201u << 23) | 0x3504F3u);
    // 1/sqrt(9) = 1/3; 2^25/3 = 11184810.67 -> 11184811 * 2^-25 = 0x3EAAAAAB.
    EXPECT_EQ(floatBits(rsqrtRn(9.0f)), 0x3EAAAAABu);
}

TEST(RsqrtRn, SpecialInputs) {
    float const inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(rsqrtRn(0.0f), inf);
    EXPECT_EQ(rsqrtRn(-0.0f), -inf);
    EXPECT_EQ(floatBits(rsqrtRn(inf)), 0u); // +0
    EXPECT_TRUE(std::isnan(rsqrtRn(-1.0f)));
    EXPECT_TRUE(std::isnan(rsqrtRn(-inf)));
    EXPECT_TRUE(std::isnan(rsqrtRn(f(0x80000001u)))); // negative subnormal
    EXPECT_TRUE(std::isnan(rsqrtRn(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_TRUE(std::isnan(rsqrtRn(f(0xFFC00001u))));
}

TEST(RsqrtRn, AgreesWithIntegerSquareRootOnSampledFloats) {
    // indep::rsqrtBits rounds floor(2^48 / sqrt(X)) (an integer square root) with a sticky bit: exact.
    int bad = 0;
    for (uint32_t u = 1; u < 0x7F800000u; u += 20011) {
        bad += floatBits(rsqrtRn(f(u))) != indep::rsqrtBits(f(u));
    }
    for (uint32_t u = 1; u < 4096; ++u) { // every tiny subnormal and the first normals above 1
        bad += floatBits(rsqrtRn(f(u))) != indep::rsqrtBits(f(u));
        bad += floatBits(rsqrtRn(f(0x3F800000u + u))) != indep::rsqrtBits(f(0x3F800000u + u));
    }
    EXPECT_EQ(bad, 0);
}

TEST(RsqrtRn, NonPowerOfTwo) {
    // 1/sqrt(3) = 0.57735026918962...; the float grid near it is 2^-24: 9686330.43 * 2^-24 -> 9686330,
    // significand bits 9686330 - 2^23 = 0x13CD3A, exponent -1: 0x3F13CD3A.
    EXPECT_EQ(indep::rsqrtBits(3.0f), 0x3F13CD3Au);
    EXPECT_EQ(floatBits(rsqrtRn(3.0f)), 0x3F13CD3Au);
}

TEST(RsqrtRn, IndependentOfCallerRoundingMode) {
    // rsqrtRn and the casts assume round-to-nearest; every public entry point installs it with FpEnvGuard
    // and restores the caller's mode afterwards.
    std::fesetround(FE_DOWNWARD);
    {
        FpEnvGuard guard;
        EXPECT_EQ(floatBits(rsqrtRn(3.0f)), 0x3F13CD3Au);
        EXPECT_EQ(floatToHalf(1.0f + p2(-11) + p2(-23)), 0x3C01);
    }
    EXPECT_EQ(std::fegetround(), FE_DOWNWARD);
    std::fesetround(FE_TONEAREST);
}

// ---- relu, butterfly, logit ------------------------------------------------------------------------

TEST(Relu, NegativeZeroAndNaNBecomePositiveZero) {
    EXPECT_EQ(floatBits(relu(-0.0f)), 0u);
    EXPECT_EQ(floatBits(relu(std::numeric_limits<float>::quiet_NaN())), 0u);
    EXPECT_EQ(floatBits(relu(f(0xFFC00000u))), 0u);
    EXPECT_EQ(floatBits(relu(-1.0f)), 0u);
    EXPECT_EQ(floatBits(relu(-std::numeric_limits<float>::infinity())), 0u);
    EXPECT_EQ(relu(2.5f), 2.5f);
    EXPECT_EQ(floatBits(relu(f(1))), 1u); // smallest subnormal kept
    EXPECT_EQ(relu(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
}

TEST(Logit, AllNegativeZeroDotsGivePositiveZero) {
    float const dots[4] = {-0.0f, -0.0f, -0.0f, -0.0f};
    EXPECT_EQ(floatBits(logitOf(dots)), 0u); // relu(-0) = +0; (+0 + +0 ...) * c = +0
    // 512 * 0x3DB504F3 (a power of two times the constant): exact, 0x3DB504F3 with exponent +9.
    float const d128[4] = {128.0f, 128.0f, 128.0f, 128.0f};
    EXPECT_EQ(floatBits(logitOf(d128)), 0x3DB504F3u + (9u << 23));
}

TEST(WarpSum, ButterflyAssociationIsTheContracts) {
    // p[0] = 1, p[1] = p[3] = 2^-24, other lanes 0. Butterfly (m = 16, 8, 4, 2, 1): lane 1 and lane 3 meet
    // at m = 2 (1 ^ 2 = 3): 2^-24 + 2^-24 = 2^-23 (exact); lane 0 meets lane 1 at m = 1: 1 + 2^-23 (exact,
    // the float after 1). Lane 0 never sees a lone 2^-24.
    float p[32] = {};
    p[0] = 1.0f;
    p[1] = p2(-24);
    p[3] = p2(-24);
    EXPECT_EQ(floatBits(warpSum(p)), 0x3F800001u);
    // Other associations give 1.0f: sequential ((1 + 2^-24) + 0) + 2^-24: each 1 + 2^-24 is a tie -> 1;
    // the ascending butterfly m = 1, 2, ...: lane 0 = 1 + 2^-24 -> 1 first, then 1 + 2^-24 -> 1.
    float seq = 0.0f;
    for (float v : p) {
        seq = seq + v;
    }
    EXPECT_EQ(floatBits(seq), 0x3F800000u);
}

TEST(WarpSum, EqualLanes) {
    float p[32];
    for (float& v : p) {
        v = 4.0f;
    }
    EXPECT_EQ(warpSum(p), 128.0f);
}

TEST(HeadDot, LaneOwnershipAndButterfly) {
    // q[d] = 1; k[1] = k[3] = 2^-24 (lanes 1 and 3), k[0] = 1 (lane 0), rest 0: each lane's chain is exact,
    // then the butterfly case above: 1 + 2^-23. A different lane ownership (lane l owning dims 4l..4l+3)
    // would put dims 0..3 in one chain: ((1 + 2^-24) + 0) + 2^-24 = 1.
    float q[128];
    float k[128] = {};
    for (float& v : q) {
        v = 1.0f;
    }
    k[0] = 1.0f;
    k[1] = p2(-24);
    k[3] = p2(-24);
    EXPECT_EQ(floatBits(headDot(q, k)), 0x3F800001u);
}

// ---- normRope ---------------------------------------------------------------------------------------

TEST(NormVariance, SumOfSquaresIsAnFmaChain) {
    // x[0] = 1, x[1] = a = 14529295 * 2^-24 (0x3F5DB30F), x[2..] = 0. Lane 0: fma(1,1,0) = 1, then
    // fma(a, a, 1): a^2 = 211100413197025 * 2^-48 exactly = (12582565 + 2357985 * 2^-24) * 2^-24, so
    // 1 + a^2 = (14679890.5 + 2357985 * 2^-25) * 2^-23: just above a tie -> 14679891 * 2^-23. The other
    // lanes are 0, the butterfly adds +0s (exact), v = fma(s, 2^-7, 0) = 14679891 * 2^-30 = 0x3C5FFF53.
    // With a product then a sum: a*a rounds to 12582565 * 2^-24 (2357985 < 2^23), 1 + that is exactly the
    // tie 14679890.5 * 2^-23 -> even 14679890: v would be 0x3C5FFF52.
    float x[128] = {};
    x[0] = 1.0f;
    x[1] = f(0x3F5DB30Fu);
    EXPECT_EQ(floatBits(normVariance(x, 0.0f)), 0x3C5FFF53u);
}

TEST(NormVariance, EpsIsFusedWithTheMean) {
    // All x = 1: lanes 4, s = 128, v = fma(128, 2^-7, eps) = 1 + eps rounded once. eps = 2^-25: 1 + 2^-25
    // is below the half ulp 2^-24 -> 1.
    float x[128];
    for (float& v : x) {
        v = 1.0f;
    }
    EXPECT_EQ(normVariance(x, p2(-25)), 1.0f);
    EXPECT_EQ(normVariance(x, 0.5f), 1.5f);
}

// normRope (eps 0) of a row of constant x and gamma w, with cos c and sin s at every rope index.
std::array<float, 128> normRopeOfConstants(float x, float w, float c, float s) {
    float xs[128], ws[128], cs[64];
    std::fill(xs, xs + 128, x);
    std::fill(ws, ws + 128, w);
    std::fill(cs, cs + 32, c);
    std::fill(cs + 32, cs + 64, s);
    std::array<float, 128> o;
    normRope(xs, ws, cs, 0.0f, o.data());
    return o;
}

TEST(NormRope, ProductOrderIsXTimesInvThenTimesOnePlusW) {
    // x = 3 everywhere: lanes 36, s = 1152, v = 9, inv = 0x3EAAAAAB = 11184811 * 2^-25 (= (2^25 + 1) / 3 * 2^-25).
    // w = 0.5009765625 = 513/1024 everywhere: g = 1 + w = 1537/1024 exactly. cos = 1, sin = 0.
    // (x * inv) = (2^25 + 1) * 2^-25 -> 1 (2^-25 is below half an ulp); y = 1 * g = g = 0x3FC02000.
    // Rope with c = 1, s = 0: fma(y, 1, -(y' * 0)) = y. So o[d] = 0x3FC02000 for every d.
    // The other order x * (inv * g): inv * g = 17191054507 * 2^-35 = 8394069.58 * 2^-24 -> 8394070 * 2^-24,
    // times 3 = 25182210 * 2^-24 = 12591105 * 2^-23 = 0x3FC02001.
    std::array<float, 128> const o = normRopeOfConstants(3.0f, 0.5009765625f, 1.0f, 0.0f);
    for (int d = 0; d < 128; ++d) {
        ASSERT_EQ(floatBits(o[d]), 0x3FC02000u) << d;
    }
}

TEST(NormRope, RopeSigns) {
    // x = 1, w = 0, eps = 0: v = 1, inv = 1, y = 1. cos = 0.6f, sin = 0.8f (10066330 and 13421773 * 2^-24):
    // o[i] = fma(1, 0.6f, -(1 * 0.8f)) = -3355443 * 2^-24 (exact) = 0xBE4CCCCC;
    // o[i+32] = fma(1, 0.6f, 1 * 0.8f) = 23488103 * 2^-24 = 11744051.5 * 2^-23 -> even 11744052 = 0x3FB33334;
    // o[d] = 1 for d >= 64.
    std::array<float, 128> const o = normRopeOfConstants(1.0f, 0.0f, 0.6f, 0.8f);
    for (int i = 0; i < 32; ++i) {
        ASSERT_EQ(floatBits(o[i]), 0xBE4CCCCCu) << i;
        ASSERT_EQ(floatBits(o[i + 32]), 0x3FB33334u) << i;
    }
    for (int d = 64; d < 128; ++d) {
        ASSERT_EQ(o[d], 1.0f) << d;
    }
}

TEST(BlockMean, LeftToRightThenQuarter) {
    // (((2^24 + 1) + 1) + 0) * 0.25: 2^24 + 1 is a tie -> 2^24, again 2^24; * 0.25 = 2^22. Summing the two
    // ones first would give 2^24 + 2 -> 2^22 + 0.5.
    EXPECT_EQ(blockMean(p2(24), 1.0f, 1.0f, 0.0f), p2(22));
}

} // namespace
} // namespace ref
} // namespace qsa

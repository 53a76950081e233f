// CPU tests of the exhaustive checks' host side: simulated device results (the reference itself) match; a one-bit
// planted error is found and named; NaN payload freedom applies to 1/sqrt and casts from T only; the independent
// checker holds the reference against reference/independent.h (1/sqrt on positive finite floats only).
#include "tools/exhaustive_compare.h"

#include <gtest/gtest.h>

#include <vector>

using namespace qsa::certify;

namespace {

struct Chunk {
    uint32_t base, n;
    std::vector<uint32_t> rs;
    std::vector<uint16_t> h, bf;
    Chunk(uint32_t b, uint32_t count) : base(b), n(count), rs(count), h(count), bf(count) {
        for (uint32_t i = 0; i < n; ++i) {
            rs[i] = referenceRsqrtBits(base + i);
            h[i] = referenceHalfBits(base + i);
            bf[i] = referenceBf16Bits(base + i);
        }
    }
    void compare(int threads, CheckStats& a, CheckStats& b, CheckStats& c) const {
        compareFloatInputs(base, n, rs.data(), h.data(), bf.data(), threads, a, b, c);
    }
};

// Ranges around the interesting patterns: zeros and subnormals, 1.0, the half overflow threshold, inf and NaNs,
// negative numbers.
std::vector<uint32_t> const kBases = {0x00000000u, 0x3F7F8000u, 0x477FE000u, 0x7F7F8000u,
                                      0x7FFF8000u, 0xBF800000u, 0xFFFF0000u};

TEST(ExhaustiveCompare, ReferenceAgainstItselfMatches) {
    for (uint32_t base : kBases) {
        Chunk c(base, 65536);
        CheckStats a, b, d;
        c.compare(2, a, b, d);
        EXPECT_EQ(a.inputs, 65536u);
        EXPECT_EQ(a.mismatches + b.mismatches + d.mismatches, 0u) << std::hex << base;
    }
}

TEST(ExhaustiveCompare, PlantedOneBitErrorsAreFoundAndNamed) {
    Chunk c(0x3F7F8000u, 65536);
    uint32_t const one = 0x3F800000u - c.base;
    c.rs[one] ^= 1;     // plant: 1/sqrt(1.0) one ulp off
    c.h[one + 5] ^= 1;  // plant: a half cast one ulp off
    c.bf[100] = 0x7FC0; // plant: a non-NaN bf16 result replaced by a NaN
    CheckStats a, b, d;
    c.compare(3, a, b, d);
    ASSERT_EQ(a.mismatches, 1u);
    EXPECT_EQ(a.examples[0].input, 0x3F800000u);
    EXPECT_EQ(a.examples[0].reference, 0x3F800000u);
    EXPECT_EQ(a.examples[0].device, 0x3F800001u);
    EXPECT_EQ(b.mismatches, 1u);
    EXPECT_EQ(b.examples[0].input, 0x3F800005u);
    EXPECT_EQ(d.mismatches, 1u);
}

TEST(ExhaustiveCompare, NaNPayloadsFreeForRsqrtButNotForCastsToT) {
    Chunk c(0x7FC00000u, 65536); // all NaNs
    for (uint32_t i = 0; i < c.n; ++i) {
        c.rs[i] = 0x7FFFFFFFu; // any NaN is a valid 1/sqrt(NaN)
    }
    CheckStats a, b, d;
    c.compare(2, a, b, d);
    EXPECT_EQ(a.mismatches, 0u);
    EXPECT_EQ(a.nanResults, 65536u);
    c.h[7] = 0x7E00; // a NaN, but not the canonical 0x7FFF
    CheckStats a2, b2, d2;
    c.compare(2, a2, b2, d2);
    EXPECT_EQ(b2.mismatches, 1u);
}

TEST(ExhaustiveCompare, ExamplesAreTheSmallestInputsWhateverTheThreads) {
    Chunk c(0, 1u << 20);
    for (uint32_t i = 0; i < c.n; i += 4099) {
        c.h[i] ^= 1;
    }
    CheckStats a1, b1, d1, a8, b8, d8;
    c.compare(1, a1, b1, d1);
    c.compare(8, a8, b8, d8);
    ASSERT_EQ(b1.examples.size(), CheckStats::kMaxExamples);
    EXPECT_EQ(b1.mismatches, b8.mismatches);
    for (size_t k = 0; k < CheckStats::kMaxExamples; ++k) {
        EXPECT_EQ(b1.examples[k].input, 4099u * k);
        EXPECT_EQ(b8.examples[k].input, 4099u * k);
    }
}

TEST(ExhaustiveCompare, WidenAllPatterns) {
    std::vector<uint32_t> h(65536), b(65536);
    for (uint32_t x = 0; x < 65536u; ++x) {
        h[x] = referenceHalfToFloatBits(uint16_t(x));
        b[x] = referenceBf16ToFloatBits(uint16_t(x));
    }
    h[0x7E01] = 0x7FFFFFFFu; // NaN of half -> some float NaN: fine
    CheckStats sh, sb;
    compareWiden(h.data(), b.data(), sh, sb);
    EXPECT_EQ(sh.inputs, 65536u);
    EXPECT_EQ(sh.mismatches + sb.mismatches, 0u);
    b[0x3F80] ^= 1; // plant: bf16 1.0 widened wrong
    CheckStats sh2, sb2;
    compareWiden(h.data(), b.data(), sh2, sb2);
    ASSERT_EQ(sb2.mismatches, 1u);
    EXPECT_EQ(sb2.examples[0].input, 0x3F80u);
}

TEST(ExhaustiveCompare, IndependentCheckerJudgesTheReference) {
    for (uint32_t base : kBases) {
        uint32_t const stride = 3;
        uint32_t const n = 65536;
        std::vector<uint32_t> rs(n);
        std::vector<uint16_t> h(n), bf(n);
        referenceFloatInputs(base, n, stride, 2, rs.data(), h.data(), bf.data());
        for (uint32_t i = 0; i < n; ++i) {
            ASSERT_EQ(h[i], referenceHalfBits(base + i * stride));
        }
        CheckStats a, b, d;
        compareFloatInputs(base, n, rs.data(), h.data(), bf.data(), 2, a, b, d, Truth::kIndependent, stride);
        EXPECT_EQ(b.inputs, n);
        EXPECT_EQ(a.mismatches + b.mismatches + d.mismatches, 0u) << std::hex << base;
        uint32_t inDomain = 0; // 1/sqrt's domain: positive finite floats
        for (uint32_t i = 0; i < n; ++i) {
            inDomain += base + i * stride > 0 && base + i * stride < 0x7F800000u ? 1 : 0;
        }
        EXPECT_EQ(a.inputs, inDomain) << std::hex << base;
        bool const positiveFinite = inDomain == n;
        if (positiveFinite) {
            rs[9] ^= 1; // plant: the reference's 1/sqrt one ulp off
            CheckStats a2, b2, d2;
            compareFloatInputs(base, n, rs.data(), h.data(), bf.data(), 2, a2, b2, d2, Truth::kIndependent, stride);
            ASSERT_EQ(a2.mismatches, 1u);
            EXPECT_EQ(a2.examples[0].input, base + 9 * stride);
        }
    }
    EXPECT_EQ(judgedFloatInputs(1, Truth::kIndependent, 1), 0x7F7FFFFFu);
    EXPECT_EQ(judgedFloatInputs(2, Truth::kIndependent, 16), uint64_t{1} << 28);
}

TEST(ExhaustiveCompare, IndependentRoundTripOfAllPatterns) {
    std::vector<uint32_t> h(65536), b(65536);
    referenceRoundTrips(h.data(), b.data());
    CheckStats sh, sb;
    compareWiden(h.data(), b.data(), sh, sb, Truth::kIndependent);
    EXPECT_EQ(sh.inputs + sb.inputs, 2 * 65536u);
    EXPECT_EQ(sh.mismatches + sb.mismatches, 0u);
    h[0x7E01] = 0x7E01; // plant: a NaN pattern kept instead of the canonical 0x7FFF
    CheckStats sh2, sb2;
    compareWiden(h.data(), b.data(), sh2, sb2, Truth::kIndependent);
    ASSERT_EQ(sh2.mismatches, 1u);
    EXPECT_EQ(sh2.examples[0].reference, 0x7FFFu);
}

} // namespace

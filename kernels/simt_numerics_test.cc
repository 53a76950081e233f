// testing/simt's float intrinsics against the reference's (which //tools:exhaustive_primitives has compared with
// the GPU over all 2^32 floats): __frsqrt_rn on every special value and on 2^24 floats spread over every
// exponent, bit for bit. The simt kernel tests' bit-exactness rests on these (K1a, K1b and B1 normalize with
// __frsqrt_rn; the _rn add, multiply and fma are the host's IEEE operations).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "reference/numerics.h"
#include "testing/rng.h"
#include "testing/simt.h"

namespace qsa {
namespace {

uint32_t bitsOf(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float fromBits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

TEST(SimtNumerics, FrsqrtRnEqualsReference) {
    std::vector<uint32_t> xs = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7FC12345u,
                                0xFFC00001u, 0x7F800001u, 0x00000001u, 0x00000002u, 0x007FFFFFu, 0x00800000u,
                                0x7F7FFFFFu, 0x3F800000u, 0x40800000u, 0xBF800000u, 0x80000001u};
    testlib::Rng rng(5);
    for (uint32_t e = 0; e < 256; ++e) {
        for (int i = 0; i < 65536; ++i) {
            xs.push_back((static_cast<uint32_t>(rng.below(2)) << 31) | (e << 23) |
                         static_cast<uint32_t>(rng.below(1 << 23)));
        }
    }
    size_t bad = 0;
    for (uint32_t u : xs) {
        float const x = fromBits(u);
        uint32_t const got = bitsOf(__frsqrt_rn(x)), want = bitsOf(ref::rsqrtRn(x));
        if (got != want && ++bad <= 5) {
            ADD_FAILURE() << "__frsqrt_rn(0x" << std::hex << u << "): simt 0x" << got << ", reference 0x" << want;
        }
    }
    EXPECT_EQ(bad, 0u) << "of " << xs.size() << " inputs";
    std::printf("QSA_COVERAGE SimtNumerics.FrsqrtRnEqualsReference inputs=%zu\n", xs.size());
}

} // namespace
} // namespace qsa

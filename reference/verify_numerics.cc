// Exhaustive (or strided) check of the scalar primitives against the integer-only implementations of
// independent.h: every float through both RNE casts, every positive finite float through rsqrtRn, and
// every 16-bit pattern through the cast round trip. Not a test (minutes on one core):
//   bazel run //reference:verify_numerics -- [stride]
#include "reference/independent.h"
#include "reference/numerics.h"

#include <cstdio>
#include <cstdlib>

using namespace qsa::ref;

int main(int argc, char** argv) {
    uint64_t const stride = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
    FpEnvGuard guard;
    uint64_t castChecked = 0;
    uint64_t castBad = 0;
    for (uint64_t u = 0; u < (uint64_t{1} << 32); u += stride) {
        float const f = bitsFloat(static_cast<uint32_t>(u));
        ++castChecked;
        if (floatToHalf(f) != indep::floatToHalf(f) || floatToBf16(f) != indep::floatToBf16(f)) {
            if (++castBad <= 10) {
                std::printf("cast mismatch at %08x: half %04x vs %04x, bf16 %04x vs %04x\n", static_cast<unsigned>(u),
                            floatToHalf(f), indep::floatToHalf(f), floatToBf16(f), indep::floatToBf16(f));
            }
        }
    }
    std::printf("casts: %llu floats checked, %llu mismatches\n", static_cast<unsigned long long>(castChecked),
                static_cast<unsigned long long>(castBad));
    uint64_t rsChecked = 0;
    uint64_t rsBad = 0;
    for (uint64_t u = 1; u < 0x7F800000u; u += stride) {
        float const x = bitsFloat(static_cast<uint32_t>(u));
        ++rsChecked;
        uint32_t const got = floatBits(rsqrtRn(x));
        uint32_t const want = indep::rsqrtBits(x);
        if (got != want && ++rsBad <= 10) {
            std::printf("rsqrt mismatch at %08x: %08x vs %08x\n", static_cast<unsigned>(u), got, want);
        }
    }
    std::printf("rsqrt: %llu positive finite floats checked, %llu mismatches\n",
                static_cast<unsigned long long>(rsChecked), static_cast<unsigned long long>(rsBad));
    uint64_t rtBad = 0;
    for (uint32_t h = 0; h < 65536; ++h) {
        bool const halfNaN = (h & 0x7FFF) > 0x7C00;
        bool const bfNaN = (h & 0x7FFF) > 0x7F80;
        uint16_t const hb = static_cast<uint16_t>(h);
        if (floatToHalf(halfToFloat(hb)) != (halfNaN ? 0x7FFF : hb)) {
            ++rtBad;
        }
        if (floatToBf16(bf16ToFloat(hb)) != (bfNaN ? 0x7FFF : hb)) {
            ++rtBad;
        }
    }
    std::printf("round trip: 2 x 65536 patterns, %llu mismatches\n", static_cast<unsigned long long>(rtBad));
    return (castBad || rsBad || rtBad) ? 1 : 0;
}

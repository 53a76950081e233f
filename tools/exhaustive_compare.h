// Host side of the exhaustive scalar checks: the reference (//reference numerics.h) against device results, bit for
// bit, multi-threaded. Pure CPU: //tools:exhaustive_compare_test checks it with simulated device results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qsa {
namespace certify {

struct Mismatch {
    uint32_t input = 0;
    uint32_t device = 0;
    uint32_t reference = 0;
    bool operator<(Mismatch const& o) const { return input < o.input; }
};

// Result of one check over its input range. Matching rule (contract section 4): equal bits; except that a NaN
// result of 1/sqrt or of a cast FROM T may carry any payload (payloads are not part of the contract), so there both
// being NaN matches. Casts TO T have no such freedom: every NaN must be exactly 0x7FFF.
struct CheckStats {
    uint64_t inputs = 0;
    uint64_t mismatches = 0;
    uint64_t nanResults = 0;        // inputs whose reference result is NaN
    std::vector<Mismatch> examples; // the smallest inputs that mismatch, at most kMaxExamples
    static constexpr size_t kMaxExamples = 8;
    void merge(CheckStats const& o);
};

// Compares device results for inputs [base, base + n) of rsqrt_rn, float_to_half and float_to_bf16 with the
// reference, on `threads` threads (each installs the default FP environment).
void compareFloatInputs(uint32_t base, uint32_t n, uint32_t const* rsqrtBits, uint16_t const* halfBits,
                        uint16_t const* bf16Bits, int threads, CheckStats& rsqrt, CheckStats& toHalf,
                        CheckStats& toBf16);

// Compares device results of half_to_float and bf16_to_float for all 65536 patterns.
void compareWiden(uint32_t const* halfToFloat, uint32_t const* bf16ToFloat, CheckStats& fromHalf, CheckStats& fromBf16);

// Reference results (for tests and for simulated runs).
uint32_t referenceRsqrtBits(uint32_t u);
uint16_t referenceHalfBits(uint32_t u);
uint16_t referenceBf16Bits(uint32_t u);
uint32_t referenceHalfToFloatBits(uint16_t h);
uint32_t referenceBf16ToFloatBits(uint16_t h);

} // namespace certify
} // namespace qsa

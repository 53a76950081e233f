// Host side of the exhaustive scalar checks, bit for bit, multi-threaded, with two checkers (Truth):
//   kReference    the candidate results (the device's) against the reference (//reference numerics.h);
//   kIndependent  the candidate results (the reference's own) against the integer-only ground truth of
//                 reference/independent.h: casts on every float, 1/sqrt on every positive finite float (its
//                 domain; other inputs are not judged), the T -> float -> T round trip (T or NaN -> 0x7FFF).
// Pure CPU: //tools:exhaustive_compare_test checks it with simulated candidates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qsa {
namespace certify {

enum class Truth { kReference, kIndependent };

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

// Compares candidate results for the inputs base + i * stride, i < n, of rsqrt_rn, float_to_half and
// float_to_bf16 with `truth`, on `threads` threads (each installs the default FP environment).
void compareFloatInputs(uint32_t base, uint32_t n, uint32_t const* rsqrtBits, uint16_t const* halfBits,
                        uint16_t const* bf16Bits, int threads, CheckStats& rsqrt, CheckStats& toHalf,
                        CheckStats& toBf16, Truth truth = Truth::kReference, uint32_t stride = 1);

// Compares candidate results for all 65536 patterns h with `truth`: kReference, half_to_float / bf16_to_float
// (halfToFloat[h] = bits of the widened float); kIndependent, the round trip (halfToFloat[h] = T bits of
// T(float(h)), must be h, or 0x7FFF for a NaN pattern).
void compareWiden(uint32_t const* halfToFloat, uint32_t const* bf16ToFloat, CheckStats& fromHalf, CheckStats& fromBf16,
                  Truth truth = Truth::kReference);

// The candidate the kIndependent checker judges: the reference's own results (also the simulated device).
void referenceFloatInputs(uint32_t base, uint32_t n, uint32_t stride, int threads, uint32_t* rsqrtBits,
                          uint16_t* halfBits, uint16_t* bf16Bits);
void referenceRoundTrips(uint32_t* half, uint32_t* bf16);

// Number of inputs a float check judges over base + i * stride, i < n (1/sqrt under kIndependent: only the
// positive finite floats).
uint64_t judgedFloatInputs(int check, Truth truth, uint64_t stride);

// Reference results (for tests and for simulated runs).
uint32_t referenceRsqrtBits(uint32_t u);
uint16_t referenceHalfBits(uint32_t u);
uint16_t referenceBf16Bits(uint32_t u);
uint32_t referenceHalfToFloatBits(uint16_t h);
uint32_t referenceBf16ToFloatBits(uint16_t h);

} // namespace certify
} // namespace qsa

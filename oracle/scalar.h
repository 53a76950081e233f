// The scalar steps of CONTRACT.md section 4 (profile `ieee`), written literally: lane arrays of 32, the
// butterfly, fma where the contract says fma and two roundings where it writes a product and a sum (this
// package is built with -ffp-contract=off). Only the casts to/from T and the correctly rounded 1/sqrt come
// from reference/numerics.h (the primitives verified on all 2^32 inputs), with its bit casts and FP environment
// guard; everything else is written here.
#pragma once

#include <cstdint>

#include "reference/numerics.h"

namespace qsa {
namespace oracle {

constexpr int32_t kHeads = 4;
constexpr int32_t kDim = 128;
constexpr int32_t kLanes = 32;
constexpr int32_t kQkWidth = 640; // 4 q heads, then raw k at [512, 640)
constexpr int32_t kRawKCol = 512;
constexpr int32_t kWidth = 2051;
constexpr int32_t kTopK = 512;
constexpr int32_t kCosSinWidth = 64;

// T of the API, as a bit pattern of 2 bytes.
enum class Act { kHalf, kBf16 };

// Casts from T are exact.
inline float fromT(Act a, uint16_t bits) {
    return a == Act::kHalf ? ref::halfToFloat(bits) : ref::bf16ToFloat(bits);
}
// A gamma w (kDim T values) as floats.
inline void gammaOf(Act a, uint16_t const* w, float out[kDim]) {
    for (int d = 0; d < kDim; ++d)
        out[d] = fromT(a, w[d]);
}
// Casts to T: round to nearest even, overflow to +-inf, every NaN to 0x7FFF.
inline uint16_t toT(Act a, float f) {
    return a == Act::kHalf ? ref::floatToHalf(f) : ref::floatToBf16(f);
}

// The bit casts and the default FP environment (round to nearest even, no flush to zero, the caller's mode
// restored) are reference/numerics.h's: memcpy and fesetenv, no arithmetic of the contract.
using ref::bitsFloat;
using ref::floatBits;
using ref::FpEnvGuard;

// warpSum: for m in 16, 8, 4, 2, 1: p[l] = p[l] + p[l ^ m] for all l simultaneously; the answer is p[0].
float warpSum(float const p[kLanes]);

// relu(x) = x > 0 ? x : +0.0 (NaN and -0.0 become +0.0).
inline float relu(float x) {
    return x > 0.0f ? x : 0.0f;
}

// normRope(x, w, pos) steps 1-6; cosSinRow = cosSin + pos * 64; w is the raw gamma (as float); out is T.
// reversedSumSq: plant 15 only (the sum of squares' fma chain over x[4l+3] .. x[4l]); false everywhere else.
void normRope(Act a, float const x[kDim], float const w[kDim], float const* cosSinRow, float rmsEps, uint16_t out[kDim],
              bool reversedSumSq = false);

// K2 / B2 logit of one (query row, block): per head the lane fma chains and warpSum, relu, the sum in
// head order, times 0x3DB504F3. q is [4][128], kbar [128], both the T values read back as float.
float logit(float const q[kHeads * kDim], float const kbar[kDim]);

} // namespace oracle
} // namespace qsa

// Scalar primitives of the contract's `ieee` profile (../shared/CONTRACT.md section 4), shared by every
// reference stage. Built with -ffp-contract=off: a product and a sum written apart are two roundings;
// fma is std::fma. All functions assume the default FP environment (round to nearest even, no FTZ/DAZ);
// every public entry point of the reference installs it with FpEnvGuard.
#pragma once

#include "reference/qsaReference.h"

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace qsa {
namespace ref {

// Installs the default FP environment (round to nearest even, no flush to zero / denormals are zero) for
// the lifetime of the object and restores the caller's afterwards: results never depend on the caller's
// rounding mode or MXCSR flags.
class FpEnvGuard {
public:
    FpEnvGuard() {
        std::fegetenv(&saved_);
        std::fesetenv(FE_DFL_ENV);
    }
    ~FpEnvGuard() { std::fesetenv(&saved_); }
    FpEnvGuard(FpEnvGuard const&) = delete;
    FpEnvGuard& operator=(FpEnvGuard const&) = delete;

private:
    std::fenv_t saved_;
};

inline uint32_t floatBits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
}

inline float bitsFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
}

// Casts from T are exact (contract section 4).
float halfToFloat(uint16_t h);
float bf16ToFloat(uint16_t h);
inline float toFloat(DType dt, uint16_t h) {
    return dt == DType::kHalf ? halfToFloat(h) : bf16ToFloat(h);
}
// The same cast as a function (testlib::BitsDiffOpts::tValue shows T elements with it).
inline float (*toFloatOf(DType dt))(uint16_t) {
    return dt == DType::kHalf ? halfToFloat : bf16ToFloat;
}

// Casts to T: round to nearest even, overflow to +-inf, subnormals kept, EVERY NaN -> 0x7FFF.
uint16_t floatToHalf(float f);
uint16_t floatToBf16(float f);
inline uint16_t fromFloat(DType dt, float f) {
    return dt == DType::kHalf ? floatToHalf(f) : floatToBf16(f);
}

constexpr uint16_t kCanonicalNaN = 0x7FFF;

// Correctly rounded 1/sqrt(x) in float (the GPU's __frsqrt_rn), IEEE on special inputs:
// +0 -> +inf, -0 -> -inf, negative -> NaN, +inf -> +0, NaN -> NaN.
float rsqrtRn(float x);

// warpSum (the butterfly): for m in 16, 8, 4, 2, 1: p[l] = p[l] + p[l ^ m] for all l at once; returns p[0].
float warpSum(float const p[32]);

// relu(x) = x > 0 ? x : +0.0 (NaN and -0.0 become +0.0).
inline float relu(float x) {
    return x > 0.0f ? x : 0.0f;
}

// The float nearest 1/sqrt(128), bits 0x3DB504F3 (K2's logit scale).
inline float logitScale() {
    return bitsFloat(0x3DB504F3u);
}

// logit = (((relu(dot0) + relu(dot1)) + relu(dot2)) + relu(dot3)) * 0x3DB504F3.
inline float logitOf(float const dot[4]) {
    float acc = relu(dot[0]);
    acc = acc + relu(dot[1]);
    acc = acc + relu(dot[2]);
    acc = acc + relu(dot[3]);
    return acc * logitScale();
}

// K2's dot of one head: partial[l] = fma chain over i of q[l + 32i] * k[l + 32i], then warpSum.
float headDot(float const q[128], float const k[128]);

// normRope steps 1-2: partial[l] = fma chain of x[4l+i]^2 from +0.0 (lane l owns dims 4l..4l+3), s = warpSum,
// v = fma(s, 0.0078125f, rmsEps).
float normVariance(float const x[128], float rmsEps);

// normRope (contract section 4, steps 1-5) in FP32: o = rope(rmsnorm(x) * (1 + w)); cast is the caller's.
// cosSinRow is cosSin + pos * 64.
void normRope(float const x[128], float const w[128], float const* cosSinRow, float rmsEps, float o[128]);

// K1b's block mean before its cast: (((k0 + k1) + k2) + k3) * 0.25f.
inline float blockMean(float k0, float k1, float k2, float k3) {
    return (((k0 + k1) + k2) + k3) * 0.25f;
}

// Radix keys. B3's key: u = sign ? ~bits : bits | 0x80000000 (-0.0 below +0.0).
inline uint32_t selectKey(float f) {
    uint32_t b = floatBits(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
// CUB's descending float order (the prefill sort): B3's key but -0.0 counts as +0.0, NaN by its bits.
inline uint32_t cubKey(float f) {
    return selectKey(floatBits(f) == 0x80000000u ? 0.0f : f);
}

} // namespace ref
} // namespace qsa

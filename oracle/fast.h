// Profile `fast` arithmetic (CONTRACT.md section 9.1) of //oracle:oracle_fast: the section 4 steps computed
// with OTHER legal FP32 arithmetic, as aggressively as F1-F5 allow and nothing more, so that the CPU
// properties run under QSA_PROFILE=fast against an implementation whose bits really differ from `ieee`.
// Prefill (K1a, K1b, K2) and decode (B1, B2) use DIFFERENT legal arithmetic (Flavor), so that the prefill/
// decode equivalence under `fast` compares two different roundings of the same values.
// Still exact here (section 9.1 "Still exact"): which values are combined, the casts to T (RNE, NaN ->
// 0x7FFF: toT of scalar.h), the block mean rounded to T and read back, relu, and everything outside these
// functions (pool addressing, raw-k copies, selection on the logits computed here, K4).
#pragma once

#include <cmath>
#include <cstdint>

#include "oracle/scalar.h"

#ifndef QSA_ORACLE_FAST
#define QSA_ORACLE_FAST 0
#endif

namespace qsa {
namespace oracle {

// True in //oracle:oracle_fast (and its plant copies): the pipelines call fast:: instead of section 4's steps.
constexpr bool kFast = QSA_ORACLE_FAST != 0;

namespace fast {

// Which legal arithmetic: the prefill stages' or the decode stages' (each a different choice within F1-F5).
enum class Flavor { kPrefill, kDecode };

// F3's eps_r, the default of the profile (section 9.1): the rsqrt here is pushed to just inside it.
constexpr double kEpsR = 0x1p-21;

// The side of the eps_r interval the rsqrt of one normRope call lands on (+1 above the exact 1/sqrt(v), -1
// below): alternates with `key` (position and head, or block), and decode takes the other side of prefill.
// Depends on nothing but the key, so a row's numerics never depend on the batch or the chunking.
inline int rsqrtSide(int64_t key, Flavor f) {
    int const s = (key & 1) != 0 ? -1 : 1;
    return f == Flavor::kPrefill ? s : -s;
}

// F5: a subnormal becomes zero (prefill: of its own sign; decode: +0.0); every other value (zeros of either sign
// included) is unchanged. Branch-free, so that the loops over it vectorize.
inline float ftz(float x, Flavor f) {
    bool const subnormal = std::fabs(x) < 0x1p-126f && x != 0.0f;
    float const zero = f == Flavor::kPrefill ? std::copysign(0.0f, x) : 0.0f;
    return subnormal ? zero : x;
}

// F3: 1/sqrt(v) within eps_r of the exact value, on side `side` (+1 / -1), for positive normal v; special
// inputs as section 4 (+0 -> +inf, -0 -> -inf, negative -> NaN, +inf -> +0, NaN -> NaN).
float rsqrtAtEdge(float v, int side);

// K1b / B1 block mean before its cast to T: (k0 + k1 + k2 + k3) * 0.25f in the flavor's order (F1), F5.
float blockMean(float k0, float k1, float k2, float k3, Flavor f);

// normRope(x, w, pos) steps 1-6 in the flavor's arithmetic; the rsqrt on side `side` (rsqrtSide).
void normRope(Act a, float const x[kDim], float const w[kDim], float const* cosSinRow, float rmsEps, uint16_t out[kDim],
              Flavor f, int side);

// K2 / B2 logit in the flavor's arithmetic: the 4 dot products and the head sum in other orders (F1), relu and
// the final product by 0x3DB504F3 as section 4, F5.
float logit(float const q[kHeads * kDim], float const kbar[kDim], Flavor f);

} // namespace fast

// The pipelines' normRope: section 4's (reversedSumSq: plant 15 only) or, in //oracle:oracle_fast, section 9.1's
// legal arithmetic of flavor f with the rsqrt side by `key` (fast::rsqrtSide).
inline void normRopeOf(Act a, float const x[kDim], float const w[kDim], float const* cosSinRow, float rmsEps,
                       uint16_t out[kDim], fast::Flavor f, int64_t key, bool reversedSumSq = false) {
    if constexpr (kFast)
        fast::normRope(a, x, w, cosSinRow, rmsEps, out, f, fast::rsqrtSide(key, f));
    else
        normRope(a, x, w, cosSinRow, rmsEps, out, reversedSumSq);
}
} // namespace oracle
} // namespace qsa

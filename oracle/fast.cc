// Profile `fast` arithmetic of //oracle:oracle_fast (CONTRACT.md section 9.1). See fast.h. Compiled only into
// oracle_fast and its plant copies (with -DQSA_ORACLE_FAST=1), so plant sites here are fast plants.
//
// F5 everywhere: the inputs of a function (x, w, cosSin, rmsEps, q, kbar) are flushed once on entry and every
// FP32 result is flushed as it is produced, so every operation sees flushed inputs and gives a flushed result.
#include "oracle/fast.h"

#include <cmath>

#include "oracle/plants.h"

namespace qsa {
namespace oracle {
namespace fast {
namespace {

// F1: an in-place pairwise (tree) sum of n = 2^k values: p[i] += p[i + n/2], ..., answer p[0]; F5 per addition.
__attribute__((always_inline)) inline float pairwiseSum(float* p, int n, Flavor f) {
    for (int half = n / 2; half >= 1; half /= 2) {
        for (int i = 0; i < half; ++i)
            p[i] = ftz(p[i] + p[i + half], f);
    }
    return p[0];
}

// Sum of the squares x[d]^2 of normRope step 1 (F1): prefill as one fma chain from d = 127 down to 0 (products
// contracted), decode as a pairwise tree over the 128 rounded products (nothing contracted).
float sumOfSquares(float const x[kDim], Flavor f) {
    if (f == Flavor::kPrefill) {
        float acc = 0.0f;
        for (int d = kDim - 1; d >= 0; --d)
            acc = ftz(std::fma(x[d], x[d], acc), f);
        return acc;
    }
    float p[kDim];
    for (int d = 0; d < kDim; ++d)
        p[d] = ftz(x[d] * x[d], f);
    return pairwiseSum(p, kDim, f);
}

// One head's dot product q . kbar (F1; section 4's lane chains and butterfly replaced): prefill as 32 fma chains,
// chain l over d = l + 96, l + 64, l + 32, l (section 4's lane chains run backwards), then the 32 chains summed by
// adjacent pairs (p[2i] + p[2i+1], not the butterfly's p[i] + p[i+16]); decode as a pairwise tree of the 128
// rounded products (nothing contracted).
__attribute__((always_inline)) inline float dot(float const* q, float const* k, Flavor f) {
    if (f == Flavor::kPrefill) {
        float acc[kLanes] = {};
        for (int i = 3; i >= 0; --i) {
            for (int l = 0; l < kLanes; ++l)
                acc[l] = ftz(std::fma(q[l + 32 * i], k[l + 32 * i], acc[l]), f);
        }
        for (int n = kLanes / 2; n >= 1; n /= 2) {
            for (int i = 0; i < n; ++i)
                acc[i] = ftz(acc[2 * i] + acc[2 * i + 1], f);
        }
        return acc[0];
    }
    float p[kDim];
    for (int d = 0; d < kDim; ++d)
        p[d] = ftz(q[d] * k[d], f);
    return pairwiseSum(p, kDim, f);
}

} // namespace

// For positive normal v: r = 1/sqrt(v) in double (sqrt and division each correctly rounded: r = R (1 + e1),
// R the exact value, |e1| <= 2^-52 + 2^-105), t = r * (1 +- delta) (1 +- delta exact in double, the product
// rounded: factor (1 + e3), |e3| <= 2^-53), then float(t) (RNE; R is in [2^-64, 2^63], so t is a normal float:
// factor (1 + e2), |e2| <= 2^-24). The result's relative error from R is at most
//   delta + 2^-24 + 2^-52 + 2^-53 + (cross terms < 2^-44) < delta + 2^-24 + 2^-43 = eps_r - 2^-30 + 2^-43 < eps_r
// with delta = eps_r - 2^-24 - 2^-30, and at least delta - 2^-24 - 2^-43 > eps_r - 2^-23 in the direction of
// `side`: within eps_r (F3), and as close to its edge as one float rounding allows.
float rsqrtAtEdge(float v, int side) {
    if (std::isnan(v) || v < 0.0f)
        return std::nanf("");
    if (v == 0.0f)
        return std::signbit(v) ? -INFINITY : INFINITY;
    if (std::isinf(v))
        return 0.0f;
    double const delta = kEpsR - 0x1p-24 - 0x1p-30;
    double const r = 1.0 / std::sqrt(double(v));
    return float(r * (side > 0 ? 1.0 + delta : 1.0 - delta));
}

float blockMean(float k0, float k1, float k2, float k3, Flavor f) {
    k0 = ftz(k0, f), k1 = ftz(k1, f), k2 = ftz(k2, f), k3 = ftz(k3, f);
    // F1: prefill pairwise (k0 + k1) + (k2 + k3), decode the other way round ((k3 + k2) + k1) + k0.
    float const sum =
        f == Flavor::kPrefill ? ftz(ftz(k0 + k1, f) + ftz(k2 + k3, f), f) : ftz(ftz(ftz(k3 + k2, f) + k1, f) + k0, f);
    return ftz(sum * 0.25f, f); // the product by 0.25f stays; only a subnormal result is flushed (F5)
}

void normRope(Act a, float const xIn[kDim], float const wIn[kDim], float const* cosSinRow, float rmsEps,
              uint16_t out[kDim], Flavor f, int side) {
    float x[kDim], w[kDim];
    for (int d = 0; d < kDim; ++d) {
        x[d] = ftz(xIn[d], f);
        w[d] = ftz(wIn[d], f);
    }
    // Steps 1-2: the sum of squares in another order (F1); v = (s * (1/128)) + eps or (s / 128) + eps (F2).
    float const s = sumOfSquares(x, f);
    float const eps = ftz(rmsEps, f);
    float const scaled = f == Flavor::kPrefill ? ftz(s * 0.0078125f, f) : ftz(s / 128.0f, f);
    float const v = ftz(scaled + eps, f);
    // Step 3: at the edge of eps_r (F3); a v flushed to zero (F5) takes 1/sqrt(+-0) = +-inf as section 4 says.
    float const inv = rsqrtAtEdge(v, side);
    // Step 4 (F4): prefill x * (inv * (1 + w)), decode ((1 + w) * x) * inv.
    float y[kDim];
    for (int d = 0; d < kDim; ++d) {
        float gain = ftz(1.0f + w[d], f);
        if (kPlant == 22) // Plant 22: gamma used as the gain itself (w in place of 1 + w)
            gain = w[d];
        y[d] = f == Flavor::kPrefill ? ftz(x[d] * ftz(inv * gain, f), f) : ftz(ftz(gain * x[d], f) * inv, f);
    }
    // Step 5 (F4): prefill contracts the OTHER product of each rope term, o[i] = fma(-y[i+32], s, y[i] * c) and
    // o[i+32] = fma(y[i], s, y[i+32] * c); decode contracts nothing (two products, one sum, three roundings).
    float o[kDim];
    for (int i = 0; i < 32; ++i) {
        float const c = ftz(cosSinRow[i], f);
        float sn = ftz(cosSinRow[32 + i], f);
        if (kPlant == 23) // Plant 23: the rope's sin with its sign flipped
            sn = -sn;
        if (f == Flavor::kPrefill) {
            o[i] = ftz(std::fma(-y[i + 32], sn, ftz(y[i] * c, f)), f);
            o[i + 32] = ftz(std::fma(y[i], sn, ftz(y[i + 32] * c, f)), f);
        } else {
            o[i] = ftz(ftz(y[i] * c, f) - ftz(y[i + 32] * sn, f), f);
            o[i + 32] = ftz(ftz(y[i + 32] * c, f) + ftz(y[i] * sn, f), f);
        }
    }
    for (int d = 64; d < kDim; ++d)
        o[d] = y[d];
    // Step 6: the cast to T, RNE, NaN -> 0x7FFF (still exact under `fast`).
    for (int d = 0; d < kDim; ++d)
        out[d] = toT(a, o[d]);
}

namespace {

// logit() for one flavor, a compile-time constant so that the flush and the loops specialize and vectorize.
template <Flavor F>
__attribute__((always_inline)) inline float logitOf(float const qIn[kHeads * kDim], float const kIn[kDim]) {
    float q[kHeads * kDim], k[kDim];
    for (int e = 0; e < kHeads * kDim; ++e)
        q[e] = ftz(qIn[e], F);
    for (int d = 0; d < kDim; ++d)
        k[d] = ftz(kIn[d], F);
    if (kPlant == 24) { // Plant 24: q head 3 dropped (read as zeros)
        for (int d = 0; d < kDim; ++d)
            q[3 * kDim + d] = 0.0f;
    }
    float r[kHeads];
    for (int h = 0; h < kHeads; ++h)
        r[h] = relu(dot(q + h * kDim, k, F)); // relu as section 4: +0.0 for NaN, -0.0 and negatives
    // The head sum (F1): prefill in the order 3, 2, 1, 0; decode pairwise (r0 + r1) + (r2 + r3).
    float const acc = F == Flavor::kPrefill ? ftz(ftz(ftz(r[3] + r[2], F) + r[1], F) + r[0], F)
                                            : ftz(ftz(r[0] + r[1], F) + ftz(r[2] + r[3], F), F);
    return ftz(acc * bitsFloat(0x3DB504F3u), F);
}

} // namespace

// As logit() of scalar.cc, an x86-64-v3 clone besides the default (fma an instruction, loops in vector
// registers): the same source, the same roundings (-ffp-contract=off holds, nothing reassociated by the compiler).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
float logit(float const q[kHeads * kDim], float const kbar[kDim], Flavor f) {
    return f == Flavor::kPrefill ? logitOf<Flavor::kPrefill>(q, kbar) : logitOf<Flavor::kDecode>(q, kbar);
}

} // namespace fast
} // namespace oracle
} // namespace qsa

// Scalar primitives of the contract's `ieee` profile. See numerics.h.
#include "reference/numerics.h"

#include <Eigen/Core>

#include <algorithm>
#include <limits>

namespace qsa {
namespace ref {

float halfToFloat(uint16_t h) {
    // Exact (every half is a float); Eigen's conversion is integer/exact arithmetic.
    return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h));
}

float bf16ToFloat(uint16_t h) {
    // A bf16 is the top half of a float: exact, NaN payload kept (payloads are not part of the contract).
    return bitsFloat(static_cast<uint32_t>(h) << 16);
}

uint16_t floatToHalf(float f) {
    // Contract: EVERY NaN becomes 0x7FFF (Eigen would give 0x7E00 with the sign dropped or kept).
    if (std::isnan(f)) {
        return kCanonicalNaN;
    }
    // Eigen::half(float) rounds to nearest even with overflow to inf and subnormals kept.
    return Eigen::numext::bit_cast<uint16_t>(Eigen::half(f));
}

uint16_t floatToBf16(float f) {
    // Contract: EVERY NaN becomes 0x7FFF (Eigen would give 0x7FC0 / 0xFFC0).
    if (std::isnan(f)) {
        return kCanonicalNaN;
    }
    // Eigen::bfloat16(float) rounds to nearest even (integer rounding bias), overflow to inf.
    return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f));
}

// Exact sign of (m * m * x - 1) for finite m > 0 and finite x > 0 (m, x given as doubles that hold them
// exactly; m may have up to 26 significant bits, x up to 24): -1, 0 or +1. rsqrtRn's correction step.
static int compareSquareTimesToOne(double m, double x) {
    // m = mm * 2^em with mm < 2^26, x = xm * 2^ex with xm < 2^24 (frexp gives f in [0.5, 1)).
    int em = 0;
    int ex = 0;
    double fm = std::frexp(m, &em);
    double fx = std::frexp(x, &ex);
    uint64_t mm = static_cast<uint64_t>(std::ldexp(fm, 26));
    uint64_t xm = static_cast<uint64_t>(std::ldexp(fx, 24));
    em -= 26;
    ex -= 24;
    // m*m*x = P * 2^E exactly, P < 2^76.
    unsigned __int128 p = static_cast<unsigned __int128>(mm) * mm * xm;
    int e = 2 * em + ex;
    // Compare P * 2^e with 1, i.e. P with 2^k, k = -e.
    int k = -e;
    if (k < 0) {
        return p == 0 ? -1 : 1;
    }
    if (k >= 127) {
        return -1; // P < 2^76 < 2^k
    }
    unsigned __int128 one = static_cast<unsigned __int128>(1) << k;
    return p < one ? -1 : (p > one ? 1 : 0);
}

float rsqrtRn(float x) {
    if (std::isnan(x)) {
        return x;
    }
    if (x == 0.0f) {
        return std::signbit(x) ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    }
    if (x < 0.0f) {
        return std::numeric_limits<float>::quiet_NaN();
    }
    if (std::isinf(x)) {
        return 0.0f;
    }
    // Candidate: double sqrt (correctly rounded), double division, then a third rounding to float. The
    // three roundings can land one float off the correctly rounded value, so fix up exactly below.
    // The true value r* = 1/sqrt(x) lies in [2^-64, 2^74.5]: always a normal float, never a tie (a
    // midpoint m has 25 significant bits with an odd last one, and m*m*x == 1 would need m*m to divide
    // a power of two), so the correctly rounded r is the float with lo(r) < r* < hi(r), lo/hi being the
    // midpoints to its neighbours; r* < mid <=> mid*mid*x > 1, decided exactly in integers.
    float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
    double const xd = static_cast<double>(x);
    for (int iter = 0; iter < 4; ++iter) {
        double const rd = static_cast<double>(r);
        double const up = static_cast<double>(std::nextafter(r, std::numeric_limits<float>::infinity()));
        double const dn = static_cast<double>(std::nextafter(r, 0.0f));
        double const hiMid = rd + (up - rd) * 0.5; // exact: 25 significant bits
        double const loMid = rd - (rd - dn) * 0.5;
        if (compareSquareTimesToOne(hiMid, xd) < 0) {
            r = std::nextafter(r, std::numeric_limits<float>::infinity()); // r* > hiMid
        } else if (compareSquareTimesToOne(loMid, xd) > 0) {
            r = std::nextafter(r, 0.0f); // r* < loMid
        } else {
            return r;
        }
    }
    return r; // unreachable: the candidate is within one ulp
}

float warpSum(float const p[32]) {
    float cur[32];
    std::copy(p, p + 32, cur);
    // All lanes at once: every lane reads the values of the previous round.
    for (int m = 16; m >= 1; m >>= 1) {
        float nxt[32];
        for (int l = 0; l < 32; ++l) {
            nxt[l] = cur[l] + cur[l ^ m];
        }
        std::copy(nxt, nxt + 32, cur);
    }
    return cur[0];
}

float headDot(float const q[128], float const k[128]) {
    float partial[32];
    for (int l = 0; l < 32; ++l) {
        float acc = 0.0f; // +0.0
        for (int i = 0; i < 4; ++i) {
            acc = std::fma(q[l + 32 * i], k[l + 32 * i], acc);
        }
        partial[l] = acc;
    }
    return warpSum(partial);
}

float normVariance(float const x[128], float rmsEps) {
    // 1. lane l owns dims 4l..4l+3; fma chain from +0.0.
    float partial[32];
    for (int l = 0; l < 32; ++l) {
        float acc = 0.0f;
        for (int i = 0; i < 4; ++i) {
            acc = std::fma(x[4 * l + i], x[4 * l + i], acc);
        }
        partial[l] = acc;
    }
    // 2. butterfly, then v = fma(s, 1/128, eps).
    float const s = warpSum(partial);
    return std::fma(s, 0.0078125f, rmsEps);
}

void normRope(float const x[128], float const w[128], float const* cosSinRow, float rmsEps, float o[128]) {
    float const v = normVariance(x, rmsEps);
    // 3. correctly rounded 1/sqrt.
    float const inv = rsqrtRn(v);
    // 4. y = (x * inv) * (1 + w), three roundings, raw gamma.
    float y[128];
    for (int d = 0; d < 128; ++d) {
        float const xn = x[d] * inv;
        float const g = 1.0f + w[d];
        y[d] = xn * g;
    }
    // 5. neox rope over [0, 64); [64, 128) pass through.
    for (int i = 0; i < 32; ++i) {
        float const c = cosSinRow[i];
        float const sn = cosSinRow[32 + i];
        float const a = y[i];
        float const b = y[i + 32];
        float const bs = b * sn;
        float const as = a * sn;
        o[i] = std::fma(a, c, -bs);
        o[i + 32] = std::fma(b, c, as);
    }
    for (int d = 64; d < 128; ++d) {
        o[d] = y[d];
    }
}

} // namespace ref
} // namespace qsa

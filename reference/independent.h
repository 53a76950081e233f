// Independent implementations of the scalar primitives, for tests and the exhaustive check only: integer
// arithmetic throughout, no FP rounding involved, written apart from numerics.cc so that the two can be
// held against each other.
#pragma once

#include <cstdint>
#include <cstring>

namespace qsa {
namespace ref {
namespace indep {

inline uint32_t bitsOf(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Round-to-nearest-even of a finite float (bits u) to a format with `precision` significant bits whose
// smallest subnormal is 2^minUlpExp and whose infinity has bits infBits; NaN -> 0x7FFF.
inline uint16_t roundToSmall(uint32_t u, int precision, int minUlpExp, uint32_t infBits) {
    uint32_t const sign = (u >> 16) & 0x8000u;
    uint32_t const a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) {
        return 0x7FFF;
    }
    if (a == 0x7F800000u) {
        return static_cast<uint16_t>(sign | infBits);
    }
    if (a == 0) {
        return static_cast<uint16_t>(sign);
    }
    uint32_t const expField = a >> 23;
    uint64_t const sig = expField ? ((a & 0x7FFFFFu) | 0x800000u) : (a & 0x7FFFFFu);
    int const e = expField ? static_cast<int>(expField) - 150 : -149; // value = sig * 2^e
    int bitLen = 0;
    while ((sig >> bitLen) != 0) {
        ++bitLen;
    }
    int const floorLog2 = bitLen - 1 + e;
    int ulpExp = floorLog2 - (precision - 1);
    if (ulpExp < minUlpExp) {
        ulpExp = minUlpExp;
    }
    int const shift = ulpExp - e; // bits of sig below the target ulp
    uint64_t q;
    if (shift <= 0) {
        q = sig << (-shift);
    } else if (shift >= 40) {
        q = 0; // below a quarter of the smallest subnormal
    } else {
        q = sig >> shift;
        uint64_t const rem = sig & ((uint64_t{1} << shift) - 1);
        uint64_t const half = uint64_t{1} << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) {
            ++q;
        }
    }
    // Encoding is continuous from the subnormals through every binade: bits = ((ulpExp - minUlpExp) << m) + q.
    uint64_t bits = (static_cast<uint64_t>(ulpExp - minUlpExp) << (precision - 1)) + q;
    if (bits >= infBits) {
        bits = infBits;
    }
    return static_cast<uint16_t>(sign | bits);
}

inline uint16_t floatToHalf(float f) {
    return roundToSmall(bitsOf(f), 11, -24, 0x7C00u);
}
inline uint16_t floatToBf16(float f) {
    return roundToSmall(bitsOf(f), 8, -133, 0x7F80u);
}

inline unsigned __int128 isqrt128(unsigned __int128 n) {
    // Bisection: floor(sqrt(n)) for n < 2^100.
    unsigned __int128 lo = 0;
    unsigned __int128 hi = static_cast<unsigned __int128>(1) << 50;
    while (lo < hi) {
        unsigned __int128 const mid = (lo + hi + 1) >> 1;
        if (mid * mid <= n) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// Correctly rounded 1/sqrt(x) for finite x > 0, by integer square root: returns the float's bits.
inline uint32_t rsqrtBits(float x) {
    uint32_t const a = bitsOf(x);
    uint32_t const expField = a >> 23;
    unsigned __int128 X = expField ? ((a & 0x7FFFFFu) | 0x800000u) : (a & 0x7FFFFFu);
    int ex = expField ? static_cast<int>(expField) - 150 : -149; // x = X * 2^ex
    if (ex & 1) {
        X <<= 1;
        ex -= 1;
    }
    // 1/sqrt(x) = 2^(-ex/2) * 2^-48 * sqrt(2^96 / X); Q = floor(sqrt(floor(2^96 / X))) = floor(2^48 / sqrt(X)).
    unsigned __int128 const n = (static_cast<unsigned __int128>(1) << 96) / X;
    unsigned __int128 const Q = isqrt128(n);
    bool const exact = Q * Q * X == (static_cast<unsigned __int128>(1) << 96);
    int bitLen = 0;
    while ((Q >> bitLen) != 0) {
        ++bitLen;
    }
    int const drop = bitLen - 24; // >= 11: Q >= 2^35
    uint64_t q = static_cast<uint64_t>(Q >> drop);
    unsigned __int128 const rem = Q & ((static_cast<unsigned __int128>(1) << drop) - 1);
    unsigned __int128 const half = static_cast<unsigned __int128>(1) << (drop - 1);
    if (rem > half || (rem == half && (!exact || (q & 1)))) {
        ++q;
    }
    // value = q * 2^(drop - 48 - ex/2), q <= 2^24: build the float bits directly (always a normal float).
    int e2 = drop - 48 - ex / 2;
    if (q == (uint64_t{1} << 24)) {
        q >>= 1;
        e2 += 1;
    }
    // q in [2^23, 2^24): float = q * 2^e2, biased exponent = e2 + 23 + 127.
    uint32_t const biased = static_cast<uint32_t>(e2 + 23 + 127);
    return (biased << 23) | (static_cast<uint32_t>(q) & 0x7FFFFFu);
}

} // namespace indep
} // namespace ref
} // namespace qsa

"""Bit-exact FP32 building blocks of contract section 4 (profile `ieee`) in NumPy.

NumPy's float32 +, -, * are single IEEE operations rounded to nearest even, subnormals kept (NumPy never
sets flush-to-zero), so a product and a sum written separately are two roundings, as the contract asks.
What NumPy lacks is done here: a correctly rounded fma, a correctly rounded 1/sqrt, and the casts to
half/bf16 with the canonical NaN 0x7FFF.
"""
from fractions import Fraction

import numpy as np

CANONICAL_NAN = 0x7FFF  # every NaN cast to T (contract section 4)
NEG_FLT_MAX = np.uint32(0xFF7FFFFF).view(np.float32)  # invisible / padded logits (contract section 4)
INV_SQRT_128 = np.uint32(0x3DB504F3).view(np.float32)  # the float nearest 1/sqrt(128)


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def fma(a, b, c):
    """fma(a, b, c) = round32(a * b + c) with ONE rounding, elementwise on float32 arrays.

    a*b of two floats is exact in float64 (24 + 24 <= 53 bits). The float64 sum p + c may round, and
    rounding that again to float32 can be wrong (double rounding). So the sum is rounded to ODD in float64:
    TwoSum gives the exact error e of s = fl64(p + c) (exact for finite doubles without overflow, which
    float32-range values cannot reach); when e != 0 and s's last significand bit is 0, s is moved one
    float64 ulp towards the exact sum, making that bit 1 ("sticky"). Round-to-odd at 53 >= 24 + 2 bits
    followed by one round-to-nearest-even to 24 bits is correctly rounded (Boldo-Melquiond), also for
    float32 subnormal results (fewer target bits, same margin). Non-finite operands take the plain path
    (inf/NaN propagate as IEEE fma does: inf*0 + c is NaN, inf + -inf is NaN).
    """
    a, b, c = np.broadcast_arrays(_f32(a), _f32(b), _f32(c))
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        c64 = c.astype(np.float64)
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)  # TwoSum: s + e == p + c exactly
        bits = s.view(np.int64).copy()
        fix = np.isfinite(s) & (e != 0) & ((bits & 1) == 0)
        toward = np.where(np.signbit(e) == np.signbit(s), 1, -1)  # magnitude up if e has s's sign
        bits = np.where(fix, bits + toward, bits)
        return bits.view(np.float64).astype(np.float32)


def _frac(x):
    return Fraction(float(x))


def _rsqrt_exact_fix(x, y):
    """Exact correction of candidate y = float32 near 1/sqrt(x) (x a positive finite float32)."""
    xf = _frac(x)
    r = np.float32(y)
    for _ in range(4):
        up = np.nextafter(r, np.float32(np.inf))
        dn = np.nextafter(r, np.float32(0))
        hi = (_frac(r) + _frac(up)) / 2
        lo = (_frac(r) + _frac(dn)) / 2
        if hi * hi * xf < 1:  # 1/sqrt(x) > hi
            r = up
        elif lo * lo * xf > 1:  # 1/sqrt(x) < lo
            r = dn
        else:
            return r
    raise AssertionError("rsqrt candidate more than 4 ulps off")


def rsqrt_rn(x):
    """Correctly rounded 1/sqrt in float32 (the GPU's __frsqrt_rn), IEEE on special inputs.

    float64 1/sqrt(x) is two float64 roundings (sqrt, division): relative error < 2^-51. Rounding it to
    float32 is therefore correct unless it lies within 2^-51 relative of a float32 midpoint, and those
    (rare) elements are decided exactly with rationals: the true value 1/sqrt(x) < mid <=> mid^2 x > 1.
    No true value is ever a midpoint (a midpoint has 25 significant bits, odd last bit; mid^2 x == 1
    would need mid^2 to divide a power of two), so the interval test has no tie to break.
    Specials: +0 -> +inf, -0 -> -inf, negative -> NaN, +inf -> +0, NaN -> NaN (float64 gives them).
    """
    x = _f32(x)
    with np.errstate(all="ignore"):
        r64 = 1.0 / np.sqrt(x.astype(np.float64))
        y = r64.astype(np.float32)
        y64 = y.astype(np.float64)
        up = np.nextafter(y, np.float32(np.inf)).astype(np.float64)
        dn = np.nextafter(y, np.float32(0)).astype(np.float64)
        mid_hi = (y64 + up) * 0.5  # exact in float64 (25 bits)
        mid_lo = (y64 + dn) * 0.5
        dist = np.minimum(np.abs(r64 - mid_hi), np.abs(r64 - mid_lo))
        risky = np.isfinite(x) & (x > 0) & ~(dist > np.abs(r64) * 2.0**-48)
    out = y.copy()
    flat_x, flat_o = x.reshape(-1), out.reshape(-1)
    for i in np.flatnonzero(risky.reshape(-1)):
        flat_o[i] = _rsqrt_exact_fix(flat_x[i], flat_o[i])
    return out


def warp_sum(p):
    """The butterfly of contract section 4 over the last axis (length 32): for m in 16, 8, 4, 2, 1:
    p[l] = p[l] + p[l ^ m] for all l at once; the answer is lane 0."""
    p = _f32(p)
    lanes = np.arange(32)
    for m in (16, 8, 4, 2, 1):
        p = p + p[..., lanes ^ m]
    return p[..., 0]


def relu(x):
    """x > 0 ? x : +0.0 (NaN and -0.0 become +0.0)."""
    x = _f32(x)
    return np.where(x > 0, x, np.float32(0)).astype(np.float32)


# ---- casts between float32 and T (uint16 bit patterns) ----------------------------------------------


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def half_to_f32(bits):
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(np.float32)


def f32_to_bf16(x):
    """Round to nearest even; overflow -> inf (carry into the exponent); every NaN -> 0x7FFF."""
    x = _f32(x)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(CANONICAL_NAN), r).astype(np.uint16)


def f32_to_half(x):
    """Round to nearest even (NumPy's float32 -> float16 conversion is IEEE RNE, subnormals included,
    overflow to inf; checked against an integer implementation in the tests); every NaN -> 0x7FFF."""
    x = _f32(x)
    with np.errstate(all="ignore"):
        r = x.astype(np.float16).view(np.uint16)
    return np.where(np.isnan(x), np.uint16(CANONICAL_NAN), r).astype(np.uint16)


def to_f32(bits, dtype):
    return half_to_f32(bits) if dtype == "half" else bf16_to_f32(bits)


def from_f32(x, dtype):
    return f32_to_half(x) if dtype == "half" else f32_to_bf16(x)

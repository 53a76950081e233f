"""Exact (rational) rounding used as the independent oracle of the numerics tests: nothing here calls
qsa_fixture.numerics."""
from fractions import Fraction
from math import isqrt

import numpy as np

FORMATS = {  # (significand bits incl. the implicit one, minimum normal exponent, max exponent)
    "f32": (24, -126, 127),
    "half": (11, -14, 15),
    "bf16": (8, -126, 127),
}


def round_exact(q, fmt, inexact_above=False, neg_zero=False):
    """Rounds the rational q (plus an infinitesimal above |q| when inexact_above) to nearest even in
    `fmt`; returns a Python float (exactly representable in fmt) or +-inf. A zero result carries the
    sign of q, or neg_zero when q == 0."""
    prec, emin, emax = FORMATS[fmt]
    if q == 0 and not inexact_above:
        return -0.0 if neg_zero else 0.0
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    quantum = Fraction(2) ** (max(e, emin) - (prec - 1))
    n = a // quantum
    rem = a - n * quantum
    half = quantum / 2
    if rem > half or (rem == half and (inexact_above or n % 2 == 1)):
        n += 1
    v = n * quantum
    if v >= Fraction(2) ** (emax + 1):
        return sign * float("inf")
    return sign * float(v) if v != 0 else (-0.0 if sign < 0 else 0.0)


def fma_exact(a, b, c):
    """IEEE fma of three float32 values, exactly."""
    a, b, c = float(a), float(b), float(c)
    if not all(np.isfinite([a, b, c])):
        return np.float32(np.float64(a) * np.float64(b) + np.float64(c))  # specials: exact in float64
    q = Fraction(a) * Fraction(b) + Fraction(c)
    p_neg = np.signbit(a) != np.signbit(b)
    neg_zero = q == 0 and a * b == 0 and c == 0 and p_neg and np.signbit(c)
    return np.float32(round_exact(q, "f32", neg_zero=neg_zero))


def rsqrt_exact(x):
    """Correctly rounded 1/sqrt(x) for a positive finite float32, from an integer square root."""
    fx = Fraction(float(x))
    P = 200  # fixed-point bits: 1/sqrt(x) * 2^P, far more than 24 + 2 significant bits
    num = (fx.denominator << (2 * P))
    y = num // fx.numerator  # floor(2^2P / x)
    r = isqrt(y)  # floor(2^P / sqrt(x)) (floor(sqrt(floor(t))) == floor(sqrt(t)))
    exact = r * r * fx.numerator == fx.denominator << (2 * P)
    return np.float32(round_exact(Fraction(r, 1 << P), "f32", inexact_above=not exact))

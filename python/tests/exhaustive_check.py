"""One-off exhaustive checks of qsa_fixture.numerics (minutes; not part of the test suite):

  python3 tests/exhaustive_check.py rsqrt   # every positive float32 significand: x in [1, 4)
  python3 tests/exhaustive_check.py half    # float32 -> half on all 2^32 inputs vs an integer RNE
  python3 tests/exhaustive_check.py half-core  # every float32 whose binade can round to a finite nonzero
                                               # half or to its overflow ([2^-26, 2^17)), both signs; every
                                               # 61st input elsewhere (results there are +-0, inf or NaN)

rsqrt: 1/sqrt(4x) = 1/sqrt(x) / 2 exactly and the implementation only scales by powers of 4 in float64
(no float64 under/overflow from float32 inputs), so [1, 4) covers every positive finite float32, subnormals
included (each is s * 4^k with s a float32 in [1, 4)). A result y is correctly rounded iff
lo^2 x < 1 < hi^2 x for the midpoints lo, hi to its neighbours; mid^2 is exact in float64 (50 bits) and
mid^2 * x is split exactly into hi + lo by Veltkamp/Dekker, so the comparison is exact.
"""
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from qsa_fixture import numerics as nm  # noqa: E402


def two_prod(a, b):
    """Dekker's exact product in float64: a*b == p + e exactly (no overflow/underflow here)."""
    def split(v):
        c = v * 134217729.0  # 2^27 + 1
        hi = c - (c - v)
        return hi, v - hi
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def cmp_sq_times_x_to_one(m, x):
    """sign(m*m*x - 1) exactly, m a float64 with <= 26 significant bits, x float32 in [1, 4)."""
    m2 = m * m  # exact
    p, e = two_prod(m2, x)
    d = p - 1.0  # exact (Sterbenz: p within [1/2, 2] whenever it matters)
    return np.sign(np.where(np.abs(p - 1.0) > 0.5, p - 1.0, d + e))


def rsqrt_all():
    bad = 0
    lo_bits, hi_bits = np.float32(1).view(np.uint32), np.float32(4).view(np.uint32)
    for start in range(int(lo_bits), int(hi_bits), 1 << 22):
        u = np.arange(start, min(start + (1 << 22), int(hi_bits)), dtype=np.uint32)
        x = u.view(np.float32)
        y = nm.rsqrt_rn(x)
        y64 = y.astype(np.float64)
        up = np.nextafter(y, np.float32(np.inf)).astype(np.float64)
        dn = np.nextafter(y, np.float32(0)).astype(np.float64)
        x64 = x.astype(np.float64)
        ok = (cmp_sq_times_x_to_one((y64 + up) / 2, x64) > 0) & (cmp_sq_times_x_to_one((y64 + dn) / 2, x64) < 0)
        bad += int((~ok).sum())
    print(f"rsqrt: {int(hi_bits - lo_bits)} inputs in [1, 4), {bad} not correctly rounded")
    return bad


def half_int(u):
    """float32 bits -> half bits, RNE, with integers only (independent of NumPy's float16 cast)."""
    u = u.astype(np.int64)
    sign = (u >> 16) & 0x8000
    e = (u >> 23) & 0xFF
    m = u & 0x7FFFFF
    nan = (e == 255) & (m != 0)
    inf = (e == 255) & (m == 0)
    # value = (m | implicit) * 2^(e - 150); half quantum 2^-24 below 2^-14, else 2^(E - 10)
    sig = np.where(e == 0, m, m | 0x800000)
    ee = np.where(e == 0, 1, e) - 127  # unbiased exponent of the quantum 2^(ee-23)
    qexp = np.maximum(ee, -14) - 10  # half quantum exponent
    shift = qexp - (ee - 23)  # bits to drop from sig (>= 13)
    shift = np.clip(shift, 0, 40)
    n = sig >> shift
    rem = sig - (n << shift)
    half = np.where(shift > 0, 1 << np.maximum(shift - 1, 0), 0)
    up = (rem > half) | ((rem == half) & (shift > 0) & ((n & 1) == 1))
    n = n + up
    # n * 2^qexp: encode
    hexp = qexp + 10  # exponent if n is normalized in [2^10, 2^11)
    normal = n >= 1024
    n2 = np.where(n >= 2048, n >> 1, n)
    hexp = np.where(n >= 2048, hexp + 1, hexp)
    enc = np.where(normal | (n >= 2048), ((hexp + 15) << 10) | (n2 & 0x3FF), n)
    enc = np.where(normal & (hexp + 15 >= 31), 0x7C00, enc)
    out = sign | enc
    out = np.where(inf, sign | 0x7C00, out)
    out = np.where(nan, 0x7FFF, out)
    return out.astype(np.uint16)


def half_all():
    bad = 0
    for start in range(0, 1 << 32, 1 << 24):
        u = np.arange(start, start + (1 << 24), dtype=np.uint64).astype(np.uint32)
        a = nm.f32_to_half(u.view(np.float32))
        b = half_int(u)
        bad += int((a != b).sum())
    print(f"half: 2^32 inputs, {bad} differ from the integer RNE")
    return bad


def half_core():
    bad = n = 0
    for sign in (0, 1):
        for e in range(256):
            start = (sign << 31) | (e << 23)
            step = 1 if 101 <= e <= 144 else 61
            u = np.arange(start, start + (1 << 23), step, dtype=np.uint64).astype(np.uint32)
            bad += int((nm.f32_to_half(u.view(np.float32)) != half_int(u)).sum())
            n += len(u)
    print(f"half-core: {n} inputs (exponent fields 101..144 complete, both signs), {bad} differ from the integer RNE")
    return bad


if __name__ == "__main__":
    what = sys.argv[1:] or ["rsqrt", "half"]
    sys.exit(1 if sum({"rsqrt": rsqrt_all, "half": half_all, "half-core": half_core}[w]() for w in what) else 0)

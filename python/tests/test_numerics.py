"""The NumPy implementation's arithmetic against exact rational oracles (tests/exact.py)."""
import numpy as np
import pytest

from exact import fma_exact, round_exact, rsqrt_exact
from qsa_fixture import numerics as nm

RNG = np.random.default_rng(20261201)


def bits32(u):
    return np.asarray(u, dtype=np.uint32).view(np.float32)


def random_floats(n, finite=True):
    x = bits32(RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))
    return x[np.isfinite(x)] if finite else x


def same_bits(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (np.isnan(a) & np.isnan(b) | (a.view(np.uint32) == b.view(np.uint32))).all()


def check_fma(a, b, c):
    got = nm.fma(a, b, c)
    for i in range(len(a)):
        want = fma_exact(a[i], b[i], c[i])
        assert same_bits(got[i], want), (a[i], b[i], c[i], got[i], want)


def test_fma_double_rounding_cases():
    # a*b = 1 + 2^-11 + 2^-24 is a float32 midpoint; c = +-2^-60 decides the direction. float64
    # a*b + c rounds back onto the midpoint and a second rounding would go to even: wrong for +c.
    a = np.float32(1 + 2.0**-12)
    mid_up = np.array([2.0**-60, -(2.0**-60), 2.0**-100, -(2.0**-149)], np.float32)
    n = len(mid_up)
    check_fma(np.full(n, a), np.full(n, a), mid_up)
    assert nm.fma(a, a, np.float32(2.0**-60)) == np.float32(1 + 2.0**-11 + 2.0**-23)
    # The naive way is wrong there (so this test can fail).
    naive = np.float32(np.float64(a) * np.float64(a) + 2.0**-60)
    assert naive != np.float32(1 + 2.0**-11 + 2.0**-23)


def test_fma_other_midpoints_and_signs():
    # Odd 12-bit factors put products on midpoints of many binades; tiny c of both signs.
    k = RNG.integers(2**11, 2**12, 300) | 1
    a = (k * 2.0**-11).astype(np.float32)
    b = ((RNG.integers(2**12, 2**13, 300) | 1) * 2.0**-12).astype(np.float32)
    c = (RNG.choice([-1.0, 1.0], 300) * 2.0 ** RNG.integers(-149, -40, 300)).astype(np.float32)
    check_fma(a, b, c)


def test_fma_random_and_subnormal():
    a, b, c = random_floats(3000), random_floats(3000), random_floats(3000)
    n = min(len(a), len(b), len(c))
    check_fma(a[:n], b[:n], c[:n])
    small = (RNG.standard_normal(2000) * 2.0**-70).astype(np.float32)  # products deep in subnormals
    check_fma(small[:1000], small[1000:], (RNG.standard_normal(1000) * 2.0**-140).astype(np.float32))


def test_fma_zero_signs_and_specials():
    z, nz, inf = np.float32(0), np.float32(-0.0), np.float32(np.inf)
    cases = np.array([(nz, z, nz), (z, z, nz), (nz, nz, nz), (1, -1, 1), (3e38, 3e38, 0), (inf, z, z), (inf, 1, -inf)],
                     np.float32)
    check_fma(cases[:, 0], cases[:, 1], cases[:, 2])  # NaN matches NaN, otherwise the same bits


def test_rsqrt_random_edges_specials():
    x = np.abs(random_floats(6000))
    x = x[x > 0]
    edges = bits32([1, 2, 3, 0x007FFFFF, 0x00800000, 0x3F800000, 0x3F800001, 0x3F7FFFFF, 0x40800000,
                    0x7F7FFFFF, 0x7F000000, 0x33D6BF95, 0x358637BD])
    x = np.concatenate([x, edges])
    got = nm.rsqrt_rn(x)
    for i in range(len(x)):
        want = rsqrt_exact(x[i])
        assert got[i].view(np.uint32) == want.view(np.uint32), (x[i], got[i], want)
    sp = nm.rsqrt_rn(np.array([0.0, -0.0, -1.0, np.inf, np.nan, -np.inf], np.float32))
    assert sp[0] == np.inf and sp[1] == -np.inf and np.isnan(sp[2]) and sp[3].view(np.uint32) == 0
    assert np.isnan(sp[4]) and np.isnan(sp[5])


def test_rsqrt_exact_fix_corrects_a_wrong_candidate():
    # The exact path (taken near float32 midpoints) repairs a candidate one ulp off either way.
    for x in bits32([0x3F800001, 0x40490FDB, 0x00000005, 0x7E967699]):
        want = rsqrt_exact(x)
        for cand in (np.nextafter(want, np.float32(np.inf)), np.nextafter(want, np.float32(0)), want):
            assert nm._rsqrt_exact_fix(x, cand).view(np.uint32) == want.view(np.uint32)


def test_warp_sum_butterfly_order():
    p = np.zeros(32, np.float32)
    p[0], p[16], p[1] = 1e8, -1e8, 1.0  # ((1e8 + 1) + -1e8) vs other orders
    # Round m = 16 pairs lane 0 with 16: 1e8 + -1e8 = 0; lane 1 with 17: 1 -> sum 1 exactly.
    assert nm.warp_sum(p) == np.float32(1.0)
    q = RNG.standard_normal((50, 32)).astype(np.float32)
    want = []
    for row in q:  # scalar butterfly, all lanes at once
        cur = list(row)
        for m in (16, 8, 4, 2, 1):
            cur = [np.float32(cur[l] + cur[l ^ m]) for l in range(32)]
        want.append(cur[0])
    assert np.array_equal(nm.warp_sum(q).view(np.uint32), np.array(want, np.float32).view(np.uint32))


def test_relu():
    x = np.array([-0.0, np.nan, -1, 0.0, 2, np.inf], np.float32)
    assert list(nm.relu(x).view(np.uint32)) == [0, 0, 0, 0, np.float32(2).view(np.uint32), 0x7F800000]


@pytest.mark.parametrize("fmt", ["half", "bf16"])
def test_casts_to_t_against_exact(fmt):
    x = np.concatenate([random_floats(4000),
                        (RNG.standard_normal(3000) * 2.0 ** RNG.integers(-30, 20, 3000)).astype(np.float32),
                        bits32([0x477FF000, 0x477FEFFF, 0x477FE000, 0x33000000, 0x33000001, 0x337FFFFF,
                                0x387FC000, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x00018000])])
    x = np.concatenate([x, -x])
    got = nm.f32_to_half(x) if fmt == "half" else nm.f32_to_bf16(x)
    back = nm.to_f32(got, fmt)
    for i in range(len(x)):
        want = round_exact(__import__("fractions").Fraction(float(x[i])), fmt, neg_zero=bool(np.signbit(x[i])))
        assert back[i] == want and np.signbit(back[i]) == np.signbit(want), (fmt, x[i], got[i], want)


@pytest.mark.parametrize("fmt", ["half", "bf16"])
def test_casts_nan_canonical_and_exact_back(fmt):
    nans = bits32([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FA00000])
    got = nm.f32_to_half(nans) if fmt == "half" else nm.f32_to_bf16(nans)
    assert (got == 0x7FFF).all()
    allbits = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    f = nm.to_f32(allbits, fmt)
    again = nm.from_f32(f, fmt)
    isnan = np.isnan(f)
    assert np.array_equal(again[~isnan], allbits[~isnan])  # T -> float -> T is the identity
    assert (again[isnan] == 0x7FFF).all()

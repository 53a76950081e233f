// The enclosures of profile `fast` (enclosure.h) against concrete `fast` evaluations: every output of an
// evaluation that uses F1-F5 (sums in random orders and associations, random contractions, the three F2 forms
// of v, rsqrt pushed to +-eps_r, normRope products in every association, flush to zero on and off) lies in
// its interval; the same evaluations fall outside when a bound is planted too tight (rounding ignored, or
// eps_r taken as 0); and the selection judge agrees with brute force on small rows.
#include "reference/enclosure.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include "reference/numerics.h"
#include "testing/rng.h"

namespace qsa {
namespace ref {
namespace fast {
namespace {

using testlib::Rng;

// One concrete `fast` arithmetic: every choice drawn from the Rng, within F1-F5 only.
struct FastEval {
    Rng& rng;
    bool ftz;
    double epsR;
    float f(float x) { // F5: a subnormal result (or input) flushed to a zero of either sign
        if (ftz && x != 0 && std::fabs(x) < FLT_MIN)
            return rng.below(2) ? 0.0f : -0.0f;
        return x;
    }
    float add(float a, float b) { return f(f(a) + f(b)); }
    float mul(float a, float b) { return f(f(a) * f(b)); }
    float fma(float a, float b, float c) { return f(std::fma(f(a), f(b), f(c))); }
    // F1: sum of products a[i] * b[i] (b null: terms a[i]) in a random order and association, products
    // contracted at random.
    float sumProducts(std::vector<float> const& a, std::vector<float> const* b) {
        struct Node {
            float v;
            int i; // >= 0: an uncontracted leaf whose product is still open
        };
        std::vector<Node> nodes;
        for (size_t i = 0; i < a.size(); ++i)
            nodes.push_back({b ? 0.0f : a[i], b ? int(i) : -1});
        auto value = [&](Node const& n) { return n.i >= 0 ? mul(a[n.i], (*b)[n.i]) : n.v; };
        while (nodes.size() > 1) { // combine two random nodes
            size_t const x = rng.below(nodes.size());
            Node nx = nodes[x];
            nodes.erase(nodes.begin() + x);
            size_t const y = rng.below(nodes.size());
            Node ny = nodes[y];
            float r;
            if (nx.i >= 0 && rng.below(2))
                r = fma(a[nx.i], (*b)[nx.i], value(ny));
            else
                r = add(value(nx), value(ny));
            nodes[y] = {r, -1};
        }
        return value(nodes[0]);
    }
    float rsqrt(float v) {
        if (!(v >= FLT_MIN) || std::isinf(v))
            return rsqrtRn(v);
        double const exact = 1.0 / std::sqrt(double(v));
        int const mode = rng.below(4);
        if (mode == 0)
            return rsqrtRn(v);
        // Pushed to the edge of eps_r (minus the float rounding that follows), either side, or inside.
        double const d = mode == 1 ? 1 : mode == 2 ? -1 : (rng.below(2001) - 1000) / 1000.0;
        return f(float(exact * (1 + d * (epsR - 0x1p-23))));
    }
    // normRope with every freedom: x as floats (T values), w T values as float, cs the row.
    std::vector<float> normRope(std::vector<float> const& x, float const* w, float const* cs, float eps) {
        float const s = sumProducts(x, &x);
        float v;
        switch (rng.below(3)) { // F2
        case 0:
            v = fma(s, 0.0078125f, eps);
            break;
        case 1:
            v = add(mul(s, 0.0078125f), eps);
            break;
        default:
            v = add(f(f(s) / 128.0f), eps);
            break;
        }
        float const inv = rsqrt(f(v));
        std::vector<float> y(128), o(128);
        auto prod3 = [&](float a, float b, float c) { // F4: any association
            switch (rng.below(3)) {
            case 0:
                return mul(mul(a, b), c);
            case 1:
                return mul(a, mul(b, c));
            default:
                return mul(mul(a, c), b);
            }
        };
        for (int d = 0; d < 128; ++d) {
            float const g = add(1.0f, w[d]);
            if (rng.below(4) == 0) { // distributed: xi + xi * w, contracted
                float const xi = mul(x[d], inv);
                y[d] = fma(xi, w[d], xi);
            } else {
                y[d] = prod3(x[d], inv, g);
            }
        }
        for (int i = 0; i < 32; ++i) {
            float const c = cs[i], sn = cs[32 + i];
            if (rng.below(2)) {
                o[i] = fma(y[i], c, -mul(y[i + 32], sn));
                o[i + 32] = fma(y[i + 32], c, mul(y[i], sn));
            } else {
                o[i] = add(mul(y[i], c), -mul(y[i + 32], sn));
                o[i + 32] = add(mul(y[i + 32], c), mul(y[i], sn));
            }
        }
        for (int d = 64; d < 128; ++d)
            o[d] = y[d];
        return o;
    }
};

// Inputs that reach the interesting places: mixed magnitudes, subnormal (bf16), cancelling, extreme gammas.
uint16_t drawT(Rng& rng, DType dt, int mode) {
    float v;
    switch (mode) {
    case 0:
        v = rng.uniform(-2, 2);
        break;
    case 1:
        v = std::ldexp(rng.uniform(-1, 1), int(rng.between(-30, 12)));
        break;
    case 2:
        v = std::ldexp(rng.uniform(-1, 1), int(rng.between(-140, -120)));
        break; // subnormal for bf16
    default:
        v = rng.below(3) == 0 ? 0.0f : rng.uniform(-1, 1) * 1000;
        break;
    }
    return fromFloat(dt, v);
}

struct Row {
    DType dt;
    std::vector<uint16_t> x, w;
    std::vector<float> cs;
    float eps;
};

Row drawRow(Rng& rng) {
    Row r;
    r.dt = rng.below(2) ? DType::kHalf : DType::kBf16;
    int const mode = int(rng.below(5));
    for (int d = 0; d < 128; ++d) // mode 4: sparse rows (few squares: rsqrt's error dominates the bound)
        r.x.push_back(mode == 4 ? (rng.below(40) ? uint16_t(0) : drawT(rng, r.dt, 0))
                                : drawT(rng, r.dt, mode == 3 ? int(rng.below(4)) : mode));
    int const wMode = int(rng.below(3));
    for (int d = 0; d < 128; ++d)
        r.w.push_back(fromFloat(r.dt, wMode == 0   ? rng.uniform(-0.5f, 0.5f)
                                      : wMode == 1 ? -1.0f + rng.uniform(-1e-3f, 1e-3f)
                                                   : std::ldexp(rng.uniform(-1, 1), int(rng.between(-20, 10)))));
    double const pos = double(rng.below(100000));
    r.cs.resize(64);
    for (int i = 0; i < 32; ++i) {
        double const th = pos * std::pow(10000.0, -i / 32.0);
        r.cs[i] = float(std::cos(th));
        r.cs[32 + i] = float(std::sin(th));
    }
    float const epsChoices[] = {1e-6f, 0.0f, 1e-30f, 1.0f, 1e-40f};
    r.eps = epsChoices[rng.below(5)];
    return r;
}

std::vector<float> floats(DType dt, std::vector<uint16_t> const& v) {
    std::vector<float> out;
    for (uint16_t b : v)
        out.push_back(toFloat(dt, b));
    return out;
}

struct Tally {
    int64_t judged = 0, unjudged = 0, outside = 0, outsideF32 = 0;
    std::string first;
};

void tallyRow(Tally& t, DType dt, RowBounds const& b, std::vector<float> const& o, std::string const& what) {
    for (int d = 0; d < 128; ++d) {
        if (!b.judged[d]) {
            ++t.unjudged;
            continue;
        }
        ++t.judged;
        if (!(o[d] >= b.fLo[d] && o[d] <= b.fHi[d]))
            ++t.outsideF32; // the FP32 result itself, before the cast
        uint16_t const bits = fromFloat(dt, o[d]);
        if (!tInside(dt, bits, b.lo[d], b.hi[d])) {
            ++t.outside;
            if (t.first.empty())
                t.first = what + " d=" + std::to_string(d) + ": " + std::to_string(toFloat(dt, bits)) + " not in [" +
                          std::to_string(b.lo[d]) + ", " + std::to_string(b.hi[d]) + "]";
        }
    }
}

// Many rows, several concrete evaluations each; returns the tally for bounds computed with `p`.
Tally runNormRope(Params const& p, int rows, bool kbar) {
    Rng rng(kbar ? 77 : 11);
    Tally t;
    for (int r = 0; r < rows; ++r) {
        Row const row = drawRow(rng);
        std::vector<uint16_t> k[4];
        RowBounds b;
        if (kbar) {
            for (int j = 0; j < 4; ++j) {
                k[j] = row.x;
                for (int d = 0; d < 128; ++d)
                    if (rng.below(2))
                        k[j][d] = drawT(rng, row.dt, int(rng.below(3)));
            }
            uint16_t const* kp[4] = {k[0].data(), k[1].data(), k[2].data(), k[3].data()};
            b = kbarBounds(row.dt, kp, row.w.data(), row.cs.data(), row.eps, p);
        } else {
            b = qBounds(row.dt, row.x.data(), row.w.data(), row.cs.data(), row.eps, p);
        }
        for (int e = 0; e < 6; ++e) {
            FastEval ev{rng, rng.below(2) == 1, 0x1p-21};
            std::vector<float> x = floats(row.dt, row.x);
            if (kbar) { // F1: the block sum in a random order; the mean rounded to T and read back (exact)
                for (int d = 0; d < 128; ++d) {
                    std::vector<float> ks;
                    for (int j = 0; j < 4; ++j)
                        ks.push_back(toFloat(row.dt, k[j][d]));
                    float m = ev.sumProducts(ks, nullptr);
                    m = rng.below(2) ? ev.mul(m, 0.25f) : ev.f(m / 4);
                    x[d] = toFloat(row.dt, fromFloat(row.dt, ev.f(m)));
                }
            }
            std::vector<float> const o = ev.normRope(x, floats(row.dt, row.w).data(), row.cs.data(), row.eps);
            tallyRow(t, row.dt, b, o, (kbar ? "kbar row " : "q row ") + std::to_string(r));
        }
    }
    return t;
}

TEST(Enclosure, QAndKbarRowsContainEveryFastEvaluation) {
    for (bool const kbar : {false, true}) {
        SCOPED_TRACE(kbar ? "kbar rows" : "q rows");
        Tally const t = runNormRope(Params{}, kbar ? 1000 : 1500, kbar);
        std::printf("QSA_FAST_TEST %s: judged=%lld unjudged=%lld outside=%lld\n", kbar ? "kbar" : "q",
                    (long long)t.judged, (long long)t.unjudged, (long long)t.outside);
        EXPECT_EQ(t.outside, 0) << t.first;
        EXPECT_EQ(t.outsideF32, 0);
        EXPECT_GT(t.judged, 8 * t.unjudged); // the enclosure is not vacuous
    }
}

TEST(Enclosure, PlantedTooTightBoundsAreCaught) {
    Params noRounding;
    noRounding.gammaScale = 0; // F1/F4 rounding ignored
    EXPECT_GT(runNormRope(noRounding, 300, false).outsideF32, 0);
    EXPECT_GT(runNormRope(noRounding, 300, true).outsideF32, 0);
    // F3 ignored (rsqrt taken as exact): the FP32 results leave their intervals; on T values
    // the difference of eps_r and 2^-24 is mostly below T's precision.
    Params noEpsR;
    noEpsR.epsR = 0;
    Tally const t = runNormRope(noEpsR, 300, false);
    std::printf("QSA_FAST_TEST eps_r planted 0: outside=%lld (T) %lld (FP32)\n", (long long)t.outside,
                (long long)t.outsideF32);
    EXPECT_GT(t.outsideF32, 0);
}

// Logits: per head a dot product in any order with contractions, relu, head sum in any order, the scale.
float fastLogit(FastEval& ev, std::vector<float> const& q, std::vector<float> const& k) {
    std::vector<float> r;
    for (int h = 0; h < 4; ++h) {
        std::vector<float> const qh(q.begin() + h * 128, q.begin() + h * 128 + 128);
        r.push_back(relu(ev.sumProducts(qh, &k)));
    }
    if (ev.rng.below(2)) { // distributed scale: sum of relu * scale
        for (float& v : r)
            v = ev.mul(v, logitScale());
        return ev.sumProducts(r, nullptr);
    }
    return ev.mul(ev.sumProducts(r, nullptr), logitScale());
}

Tally runLogits(Params const& p, int rows) {
    Rng rng(5);
    Tally t;
    for (int r = 0; r < rows; ++r) {
        DType const dt = rng.below(2) ? DType::kHalf : DType::kBf16;
        int const mode = int(rng.below(4));
        std::vector<uint16_t> q(512), k(128 * 8);
        for (uint16_t& v : q)
            v = drawT(rng, dt, mode);
        for (uint16_t& v : k)
            v = drawT(rng, dt, mode == 3 ? int(rng.below(4)) : mode);
        std::vector<LogitBound> const b = logitBounds(dt, q.data(), k.data(), 8, p);
        for (int g = 0; g < 8; ++g) {
            std::vector<float> const kg =
                floats(dt, std::vector<uint16_t>(k.begin() + g * 128, k.begin() + g * 128 + 128));
            for (int e = 0; e < 4; ++e) {
                FastEval ev{rng, rng.below(2) == 1, 0x1p-21};
                float const v = fastLogit(ev, floats(dt, q), kg);
                ++t.judged;
                if (!(v >= b[g].lo && v <= b[g].hi)) {
                    ++t.outside;
                    if (t.first.empty())
                        t.first = "row " + std::to_string(r) + " g=" + std::to_string(g) + ": " + std::to_string(v) +
                                  " not in [" + std::to_string(b[g].lo) + ", " + std::to_string(b[g].hi) + "]";
                }
            }
            t.unjudged += b[g].ok ? 0 : 1;
        }
    }
    return t;
}

TEST(Enclosure, LogitsContainEveryFastEvaluation) {
    Tally const t = runLogits(Params{}, 1500);
    std::printf("QSA_FAST_TEST logits: evaluations=%lld unbounded=%lld outside=%lld\n", (long long)t.judged,
                (long long)t.unjudged, (long long)t.outside);
    EXPECT_EQ(t.outside, 0) << t.first;
    Params noRounding;
    noRounding.gammaScale = 0;
    EXPECT_GT(runLogits(noRounding, 300).outside, 0); // planted too tight: caught
}

// A logit whose scaled value is finite but whose head sum overflows before the scale (found by oracle_fast:
// 3.09e37 expected, +inf computed) must have an unbounded interval.
TEST(Enclosure, HeadSumOverflowBeforeTheScaleIsAllowed) {
    std::vector<uint16_t> q(512, 0), k(128, 0);
    for (int h = 0; h < 4; ++h)
        q[h * 128] = fromFloat(DType::kBf16, 1.0e19f);
    k[0] = fromFloat(DType::kBf16, 9.0e18f); // each dot 9e37, the head sum 3.6e38 > FLT_MAX, times 0.088: 3.2e37
    LogitBound const b = logitBound(DType::kBf16, q.data(), k.data());
    EXPECT_EQ(b.hi, INFINITY);
    EXPECT_FALSE(b.ok);
}

// R6: a block whose four relus are certainly +0.0 (every head's dot an exact zero, or certainly <= 0) has the
// point interval [+0, +0], and every fast evaluation gives +0.0 bits: exact ties among such blocks (relu's runs
// of +0.0) are decided by id (E3; kernel mutant 21 and oracle plant 27 reverse that order). One head that may be
// positive leaves the interval open.
TEST(Enclosure, CertainlyZeroReluLogitsArePoints) {
    Rng rng(11);
    int points = 0, evaluations = 0;
    for (int r = 0; r < 400; ++r) {
        DType const dt = rng.below(2) ? DType::kHalf : DType::kBf16;
        std::vector<uint16_t> q(512), k(128, 0);
        for (uint16_t& v : q)
            v = drawT(rng, dt, 0);
        int const kind = r % 3; // 0: k = +0 (exact zero products), 1: k = -q_0 (dots negative for all-q_0 heads)
        if (kind >= 1) {
            for (int i = 0; i < 128; ++i)
                k[i] = uint16_t(q[i] ^ 0x8000u); // dot of head 0 = -sum q^2 < 0
            for (int h = 1; h < 4; ++h)
                std::copy(q.begin(), q.begin() + 128, q.begin() + 128 * h);
        }
        if (kind == 2)
            q[128 * 3] = fromFloat(dt, 1.0e4f), k[0] = fromFloat(dt, -1.0e-4f); // head 3 still negative
        LogitBound const b = logitBound(dt, q.data(), k.data());
        bool const anyNonzero = std::any_of(q.begin(), q.end(), [](uint16_t v) { return (v & 0x7FFF) != 0; });
        if (!anyNonzero)
            continue;
        ASSERT_TRUE(b.ok && b.lo == 0.0f && b.hi == 0.0f)
            << "row " << r << " kind " << kind << ": [" << b.lo << ", " << b.hi << "]";
        ++points;
        for (int e = 0; e < 8; ++e) {
            FastEval ev{rng, rng.below(2) == 1, 0x1p-21};
            float const v = fastLogit(ev, floats(dt, q), floats(dt, k));
            ++evaluations;
            ASSERT_TRUE(v == 0.0f && !std::signbit(v)) << "row " << r << ": evaluation " << v;
        }
    }
    std::printf("QSA_FAST_TEST certainly-zero logits: points=%d evaluations=%d\n", points, evaluations);
    EXPECT_GT(points, 300);
    // One head whose dot may be positive: not a point.
    std::vector<uint16_t> q(512, 0), k(128, 0);
    q[0] = fromFloat(DType::kHalf, 1.0f);
    k[0] = fromFloat(DType::kHalf, 1.0f);
    LogitBound const open = logitBound(DType::kHalf, q.data(), k.data());
    EXPECT_GT(open.hi, 0.0f);
}

TEST(Enclosure, LogitBoundsAreNeverNegativeNorNaN) {
    Rng rng(9);
    for (int r = 0; r < 200; ++r) {
        std::vector<uint16_t> q(512), k(128);
        for (uint16_t& v : q)
            v = uint16_t(rng.next());
        for (uint16_t& v : k)
            v = uint16_t(rng.next());
        LogitBound const b = logitBound(DType::kBf16, q.data(), k.data());
        EXPECT_GE(b.lo, 0.0f);
        EXPECT_FALSE(std::isnan(b.lo) || std::isnan(b.hi));
        EXPECT_LE(b.lo, b.hi);
    }
}

// Brute force on small rows: the emitted sequences judgeSelection accepts are exactly those some choice of
// values in the intervals produces (values on a quarter grid that holds every bound: with at most 5 blocks and
// intervals at most 1 wide, every order the reals allow is realized on it).
TEST(Enclosure, SelectionJudgeAgreesWithBruteForce) {
    Rng rng(3);
    for (int trial = 0; trial < 300; ++trial) {
        int const n = int(rng.between(2, 5)), kSel = int(rng.between(1, n));
        std::vector<LogitBound> b(n);
        for (LogitBound& x : b) {
            int const lo = int(rng.below(4)), hi = lo + int(rng.below(2));
            x.lo = float(lo);
            x.hi = float(hi);
        }
        // Reachable emitted sequences (ordered) over integer and half-integer values in the bounds.
        std::set<std::vector<int32_t>> reachable;
        std::vector<float> v(n);
        std::function<void(int)> rec = [&](int i) {
            if (i == n) {
                std::vector<int32_t> ids(n);
                std::iota(ids.begin(), ids.end(), 0);
                std::stable_sort(ids.begin(), ids.end(), [&](int a, int c) { return v[a] > v[c]; });
                ids.resize(kSel);
                reachable.insert(ids);
                return;
            }
            for (float x = b[i].lo; x <= b[i].hi; x += 0.25f) { // 5 values per unit: room for 5 strictly ordered blocks
                v[i] = x;
                rec(i + 1);
            }
        };
        rec(0);
        std::vector<int32_t> perm(n);
        std::iota(perm.begin(), perm.end(), 0);
        std::set<std::vector<int32_t>> seen;
        do {
            std::vector<int32_t> const e(perm.begin(), perm.begin() + kSel);
            if (!seen.insert(e).second)
                continue;
            bool const ok = judgeSelection(b, e, true, kSel).empty();
            EXPECT_EQ(ok, reachable.count(e) == 1) << "trial " << trial << " n=" << n << " kSel=" << kSel;
            // As a set (decode): reachable iff some ordering of the same set is reachable.
            std::vector<int32_t> sorted = e;
            std::sort(sorted.begin(), sorted.end());
            bool setReachable = false;
            for (auto const& r : reachable) {
                std::vector<int32_t> rs = r;
                std::sort(rs.begin(), rs.end());
                setReachable |= rs == sorted;
            }
            EXPECT_EQ(judgeSelection(b, sorted, false, kSel).empty(), setReachable) << "trial " << trial;
        } while (std::next_permutation(perm.begin(), perm.end()));
    }
}

TEST(Enclosure, StraddlingBlocksAreThoseBothWays) {
    std::vector<LogitBound> b = {{5, 5, true}, {3, 4, true}, {3.5f, 3.5f, true}, {1, 1, true}};
    std::vector<bool> const s = straddlesThreshold(b, 2);
    EXPECT_FALSE(s[0]);
    EXPECT_TRUE(s[1]);
    EXPECT_TRUE(s[2]);
    EXPECT_FALSE(s[3]);
    EXPECT_EQ(describeEpsR(0x1p-21), "2^-21");
}

} // namespace
} // namespace fast
} // namespace ref
} // namespace qsa

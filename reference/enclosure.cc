// Interval enclosures of profile `fast` (../shared/CONTRACT.md section 9). Every bound below is an a-priori
// rounding-error bound (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., ch. 3-4) for
// u = 2^-24 (RNE) and gamma(n) = n u / (1 - n u):
//   (R1) one rounded FP32 operation: fl(x op y) = (x op y)(1 + d), |d| <= u, unless its result is subnormal
//        or overflows;
//   (R2) a sum of n terms in ANY order and association, each term possibly a product contracted into an
//        fma (F1): |fl(sum) - sum| <= gamma(n - 1 + k) * sum |t_i|, k = the roundings a term carries
//        before it enters the sum (0 for an exact product), since every term passes through at most
//        n - 1 additions;
//   (R3) a product of m factors in ANY association (F4): m - 1 roundings, relative error <= gamma(m - 1);
//   (R4) F5 and gradual underflow: a subnormal input or result is replaced by a value within 2^-126 of it
//        (flush to zero of either sign, or gradual rounding, error <= 2^-150); such an absolute error
//        introduced at an intermediate result is afterwards multiplied by at most the product of
//        max(1, |f|) over the remaining factors f, and by (1 + gamma) factors (< 2): hence the `abs` terms
//        (ops x 2^-126 x that product x 2);
//   (R5) overflow: if every intermediate magnitude is provably below FLT_MAX / 2, nothing overflows; otherwise
//        the element is unjudged (or, for a logit, its upper bound is +inf);
//   (R6) exact zeros: a dot whose products are all exact zeros (sum |q||k| = 0) is +-0.0 in any order, and a
//        dot whose enclosure lies in (-inf, 0] gives relu +0.0; when all four heads are such, the head sum
//        and the scale see only +0.0: the logit is exactly +0.0, a point interval.
// This file's own double arithmetic rounds too (2^-53 per operation, at most a few hundred operations per
// bound): every bound is widened by kSlack = 2^-40 relative, far above that and far below u.
#include "reference/enclosure.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "reference/numerics.h"
#include "reference/rowops.h"

namespace qsa {
namespace ref {
namespace fast {
namespace {

constexpr double kU = 0x1p-24;
constexpr double kEta = 0x1p-126; // R4: the smallest normal float, bound of one flush
constexpr double kFltMax = FLT_MAX;
constexpr double kSlack = 0x1p-40;
constexpr float kMinNormal = FLT_MIN;

double gamma(int n, Params const& p) {
    double const nu = n * kU;
    return p.gammaScale * nu / (1.0 - nu);
}

double lower(double x) { // x moved down by the slack
    return x - std::fabs(x) * kSlack;
}
double upper(double x) {
    return x + std::fabs(x) * kSlack;
}

// Directed roundings of a double to float (the FP32 values inside a real interval).
float rd32(double x) {
    float f = static_cast<float>(x);
    if (static_cast<double>(f) > x)
        f = std::nextafter(f, -INFINITY);
    return f;
}
float ru32(double x) {
    float f = static_cast<float>(x);
    if (static_cast<double>(f) < x)
        f = std::nextafter(f, INFINITY);
    return f;
}

bool subnormal(double v) {
    return v != 0.0 && std::fabs(v) < kMinNormal;
}

// An FP32 input as an interval: F5 may flush a subnormal input to a zero of either sign.
Interval input(double v) {
    if (!std::isfinite(v))
        return Interval{v, v, false};
    if (subnormal(v))
        return Interval{std::min(v, 0.0), std::max(v, 0.0), true};
    return Interval{v, v, true};
}

Interval mul(Interval const& a, Interval const& b) {
    double const p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    return Interval{lower(*std::min_element(p, p + 4)), upper(*std::max_element(p, p + 4)), a.ok && b.ok};
}

double mag(Interval const& a) {
    return std::max(std::fabs(a.lo), std::fabs(a.hi));
}

double amp(double m) { // R4's amplification factor of one factor
    return std::max(1.0, m);
}

// T bounds of an FP32 result known to lie in the real interval [lo, hi] (section 9.2 E1; header comment).
void toTBounds(DType dt, double lo, double hi, float& tLo, float& tHi, float* fLo = nullptr, float* fHi = nullptr) {
    float a = rd32(lo), b = ru32(hi);
    if (a < kMinNormal && b > -kMinNormal) { // F5: a subnormal result may be flushed to +-0
        a = std::min(a, 0.0f);
        b = std::max(b, 0.0f);
    }
    if (fLo) {
        *fLo = a;
        *fHi = b;
    }
    tLo = toFloat(dt, fromFloat(dt, a));
    tHi = toFloat(dt, fromFloat(dt, b));
}

// normRope (section 4 steps 1-6) over interval inputs x[d] (T values read as float, possibly an interval
// when an earlier stage's T value is only known to lie between two T values), gamma w (T values), cosSin row.
RowBounds normRopeBounds(DType dt, Interval const x[128], float const w[128], float const* cs, float rmsEps,
                         Params const& p) {
    RowBounds r;
    std::fill(r.judged, r.judged + 128, false);
    std::fill(r.lo, r.lo + 128, NAN);
    std::fill(r.hi, r.hi + 128, NAN);
    std::fill(r.fLo, r.fLo + 128, NAN);
    std::fill(r.fHi, r.fHi + 128, NAN);
    Interval X[128];
    double xMax = 0;
    for (int d = 0; d < 128; ++d) {
        X[d] = x[d];
        if (!X[d].ok || !std::isfinite(X[d].lo) || !std::isfinite(X[d].hi) || !std::isfinite(w[d]))
            return r; // a non-finite input or gamma: NaN / inf reachable, the row is unjudged
        if (subnormal(X[d].lo) || subnormal(X[d].hi)) { // F5 on the input
            X[d].lo = std::min(X[d].lo, 0.0);
            X[d].hi = std::max(X[d].hi, 0.0);
        }
        xMax = std::max(xMax, mag(X[d]));
    }
    // Step 1: s = sum of the 128 squares (R2: n terms, each one rounded product unless contracted:
    // gamma(n - 1 + 1), n the terms that are not exact zeros); squares are >= 0 so the sum is monotone in each
    // term. R4: 255 operations.
    double sLo = 0, sHi = 0;
    int nonzero = 0; // an exact zero term adds nothing and rounds nothing: R2 over the other terms only
    for (int d = 0; d < 128; ++d) {
        nonzero += X[d].lo != 0 || X[d].hi != 0;
        double const a = X[d].lo * X[d].lo, b = X[d].hi * X[d].hi;
        bool const straddles = X[d].lo <= 0 && X[d].hi >= 0;
        sLo += straddles ? 0.0 : std::min(a, b);
        sHi += std::max(a, b);
    }
    double const gS = gamma(std::max(nonzero, 1), p);
    sLo = std::max(0.0, lower(sLo) * (1 - gS) - 2 * 255 * kEta);
    sHi = upper(sHi) * (1 + gS) + 2 * 255 * kEta;
    bool const sMayOverflow = sHi >= kFltMax / 2; // R5: the sum (or a partial sum) may round to +inf
    // Step 2 (F2): v = fma(s, 1/128, eps), (s * (1/128)) + eps or (s / 128) + eps: the scaling by 2^-7 is
    // exact but for underflow (R4), the sum one rounding (R1), its result may be flushed (R4).
    Interval const E = input(rmsEps);
    if (std::isnan(rmsEps) || rmsEps == -INFINITY)
        return r;
    double vLo = sLo / 128 - kEta + E.lo;
    double vHi = sHi / 128 + kEta + E.hi;
    vLo = lower(vLo - std::fabs(vLo) * kU * p.gammaScale - kEta);
    vHi = upper(vHi + std::fabs(vHi) * kU * p.gammaScale + kEta);
    bool const vMayBeInf = sMayOverflow || rmsEps == INFINITY || vHi >= kFltMax;
    // Step 3 (F3): inv within epsR of 1/sqrt(v) for positive normal v; v = +inf gives +0 (section 4's special inputs).
    // v possibly below the smallest normal (zero, negative, subnormal, NaN): inv may be inf or NaN, the row is
    // unjudged.
    if (!(vLo >= kMinNormal))
        return r;
    double const epsR = p.epsR; // >= 2^-24 for the correctly rounded rsqrt of profile ieee to pass
    Interval inv;
    inv.lo = vMayBeInf ? 0.0 : lower(1.0 / std::sqrt(vHi) * (1 - epsR));
    inv.hi = upper(1.0 / std::sqrt(vLo) * (1 + epsR));
    // Steps 4-5 (F4): y = x * inv * g (g = 1 + w, one rounding) and the rope, in any association, contracted
    // or not. Factored as inv * (x_i g_i c -+ x_j g_j s): a pass-through dim carries 3 roundings (two
    // products, 1 + w: gamma(3)); a rotated dim 5 (three products, 1 + w, the rope's sum: gamma(5)) on each
    // of its two terms (R3, R2).
    double const g3 = gamma(3, p), g5 = gamma(5, p);
    Interval G[128];
    double gMax = 0;
    for (int d = 0; d < 128; ++d) {
        double const g = 1.0 + static_cast<double>(w[d]); // exact in double; w flushed (F5) moves it < 2^-126
        G[d] = Interval{g, g, true};
        gMax = std::max(gMax, std::fabs(g));
    }
    double csMax = 0;
    for (int i = 0; i < 64; ++i) {
        if (!std::isfinite(cs[i]))
            return r;
        csMax = std::max(csMax, static_cast<double>(std::fabs(cs[i])));
    }
    auto finish = [&](int d, Interval const& num, double numMag, double rel, double prodAmp, int ops) {
        // o in inv * num, widened by rel * inv.hi * numMag (rounding) and R4's absolute term.
        if (prodAmp * 2 >= kFltMax / 2)
            return; // R5: some association of the factors may overflow: unjudged
        Interval const core = mul(inv, num);
        double const err = rel * inv.hi * numMag * (1 + kSlack) + 2 * ops * kEta * prodAmp;
        toTBounds(dt, lower(core.lo - err), upper(core.hi + err), r.lo[d], r.hi[d], &r.fLo[d], &r.fHi[d]);
        r.judged[d] = true;
    };
    for (int d = 64; d < 128; ++d) {
        Interval const t = mul(X[d], G[d]);
        finish(d, t, mag(t), g3, amp(mag(X[d])) * amp(inv.hi) * amp(std::fabs(G[d].lo)), 3);
    }
    for (int i = 0; i < 32; ++i) {
        Interval const c = input(cs[i]), s = input(cs[32 + i]);
        Interval const xi = mul(X[i], G[i]), xj = mul(X[i + 32], G[i + 32]);
        Interval const a = mul(xi, c), b = mul(xj, s);   // o[i] = a - b
        Interval const a2 = mul(xj, c), b2 = mul(xi, s); // o[i+32] = a2 + b2
        double const prodAmp = amp(xMax) * amp(inv.hi) * amp(gMax) * amp(csMax);
        finish(i, Interval{a.lo - b.hi, a.hi - b.lo, true}, mag(a) + mag(b), g5, prodAmp, 5);
        finish(i + 32, Interval{a2.lo + b2.lo, a2.hi + b2.hi, true}, mag(a2) + mag(b2), g5, prodAmp, 5);
    }
    return r;
}

} // namespace

std::string describeEpsR(double epsR) {
    int e = 0;
    double const m = std::frexp(epsR, &e);
    if (m == 0.5)
        return "2^" + std::to_string(e - 1);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", epsR);
    return buf;
}

RowBounds qBounds(DType dt, uint16_t const* x, uint16_t const* w, float const* cosSinRow, float rmsEps,
                  Params const& p) {
    FpEnvGuard env;
    Interval X[128];
    for (int d = 0; d < 128; ++d) {
        double const v = toFloat(dt, x[d]);
        X[d] = Interval{v, v, std::isfinite(v)};
    }
    float wf[128];
    toFloats(dt, w, wf);
    return normRopeBounds(dt, X, wf, cosSinRow, rmsEps, p);
}

RowBounds kbarBounds(DType dt, uint16_t const* const k[4], uint16_t const* w, float const* cosSinRow, float rmsEps,
                     Params const& p) {
    FpEnvGuard env;
    Interval X[128];
    double const g4 = gamma(4, p);
    for (int d = 0; d < 128; ++d) {
        // The block sum k0 + k1 + k2 + k3 in any order (R2: 4 terms, gamma(3)) and the scaling by 0.25 (exact
        // but for underflow, or distributed over the terms: one more rounding, gamma(4)); R4: 4 operations.
        double lo = 0, hi = 0, m = 0;
        bool ok = true;
        for (int j = 0; j < 4; ++j) {
            Interval const kj = input(toFloat(dt, k[j][d]));
            ok = ok && kj.ok;
            lo += kj.lo;
            hi += kj.hi;
            m += mag(kj);
        }
        if (!ok || m * (1 + g4) >= kFltMax / 2) { // R5: a partial sum may overflow
            X[d] = Interval{0, 0, false};
            continue;
        }
        double const err = g4 * upper(m) + 2 * 4 * kEta;
        double const mLo = lower(lower(lo) - err) * 0.25 - kEta, mHi = upper(upper(hi) + err) * 0.25 + kEta;
        // The mean is cast to T and read back (section 9.1 keeps the cast exact): T values between the casts of
        // the interval's FP32 ends; a T value past the format's range is inf (unjudged row).
        float tLo, tHi;
        toTBounds(dt, mLo, mHi, tLo, tHi);
        X[d] = Interval{tLo, tHi, std::isfinite(tLo) && std::isfinite(tHi)};
    }
    float wf[128];
    toFloats(dt, w, wf);
    return normRopeBounds(dt, X, wf, cosSinRow, rmsEps, p);
}

namespace {

// E2 from the exact dot products: p = sum q k over 128 dims per head (products of two T values are exact in
// FP32 but for underflow/overflow, so a head's dot carries gamma(127) by R2; gamma(128) kept for the
// contraction of the first product), relu, the head sum of 4 non-negative terms (gamma(3)) and the scale
// (one rounding; distributed over the heads, one more): gamma(5) on the sum of relus. R4: per head 255
// operations on products whose factors are T values; a flushed (F5) q or kbar element changes its product by
// less than 2^-126 times the other factor.
LogitBound fromDots(double const P[4], double const M[4], double maxQ, double maxK, Params const& p) {
    double const g128 = gamma(128, p), g5 = gamma(5, p);
    double rLo = 0, rHi = 0;
    bool bounded = true;
    int certainlyZero = 0; // heads whose relu is +0.0 for every result F1-F5 allow
    for (int h = 0; h < 4; ++h) {
        if (M[h] == 0) { // R6: every product is an exact zero (M = sum |q||k| is NaN when inf meets 0)
            ++certainlyZero;
            continue;
        }
        if (M[h] * (1 + g128) >= kFltMax / 2) { // R5: the dot may overflow to inf or NaN: relu gives [0, inf]
            bounded = false;
            continue;
        }
        double const err = g128 * upper(M[h]) + 128 * kEta * amp(std::max(maxQ, maxK)) + 2 * 255 * kEta;
        certainlyZero += upper(P[h] + err) <= 0; // R6: every allowed dot is <= 0
        rLo += std::max(0.0, lower(P[h] - err));
        rHi += std::max(0.0, upper(P[h] + err));
    }
    // R6: four relus of +0.0 sum to +0.0 exactly in any order or fma, and +0.0 * scale is +0.0: the logit is a
    // point, so exact ties among such blocks (relu's runs of +0.0) decide the selection by id (E3, mutant 21).
    if (certainlyZero == 4) {
        LogitBound z;
        z.lo = z.hi = 0.0f;
        return z;
    }
    double const scale = logitScale();
    LogitBound b;
    double const lo = lower(scale * rLo * (1 - g5) - 2 * 5 * kEta);
    double const hi = upper(scale * rHi * (1 + g5) + 2 * 5 * kEta);
    b.lo = lo < kMinNormal ? 0.0f : rd32(lo); // a subnormal logit may be flushed (F5); relu keeps it >= +0.0
    // R5: the head sum of the relus (before the scale, as section 4 orders it) may overflow to +inf even when
    // the scaled logit would not.
    if (!bounded || hi >= kFltMax || upper(rHi * (1 + g5)) >= kFltMax / 2) {
        b.hi = INFINITY;
        b.ok = false;
    } else {
        b.hi = ru32(hi);
    }
    return b;
}

} // namespace

LogitBound logitBound(DType dt, uint16_t const* q, uint16_t const* kbar, Params const& p) {
    return logitBounds(dt, q, kbar, 1, p)[0];
}

using KMat = Eigen::Matrix<double, Eigen::Dynamic, 128, Eigen::RowMajor>;

struct KbarRows::Impl {
    DType dt;
    KMat K, absK;
    Eigen::VectorXd maxK;
};

KbarRows::KbarRows(DType dt, uint16_t const* kbar, int32_t n) : impl_(new Impl) {
    impl_->dt = dt;
    impl_->K.resize(n, 128);
    impl_->maxK.resize(n);
    for (int32_t g = 0; g < n; ++g) {
        double m = 0;
        for (int d = 0; d < 128; ++d) {
            double const v = toFloat(dt, kbar[size_t(g) * 128 + d]);
            impl_->K(g, d) = v;
            m = std::isnan(v) ? NAN : std::max(m, std::fabs(v));
        }
        impl_->maxK(g) = m; // NaN or inf: the logit bound is unbounded
    }
    impl_->absK = impl_->K.cwiseAbs();
}

KbarRows::~KbarRows() {
    delete impl_;
}

std::vector<LogitBound> KbarRows::bounds(uint16_t const* q, int32_t nVis, Params const& p) const {
    return boundsRows({q}, {nVis}, p)[0];
}

std::vector<std::vector<LogitBound>> KbarRows::boundsRows(std::vector<uint16_t const*> const& qRows,
                                                          std::vector<int32_t> const& nVis, Params const& p) const {
    FpEnvGuard env;
    int32_t const R = int32_t(qRows.size());
    int32_t const n = R ? *std::max_element(nVis.begin(), nVis.end()) : 0;
    std::vector<std::vector<LogitBound>> out(R);
    if (n == 0)
        return out;
    Eigen::MatrixXd P[4], M[4];
    Eigen::VectorXd maxQ = Eigen::VectorXd::Zero(R);
    for (int h = 0; h < 4; ++h) {
        Eigen::Matrix<double, Eigen::Dynamic, 128, Eigen::RowMajor> Q(R, 128);
        for (int32_t r = 0; r < R; ++r)
            for (int d = 0; d < 128; ++d) {
                double const v = toFloat(impl_->dt, qRows[r][h * 128 + d]);
                Q(r, d) = v;
                maxQ(r) = std::isnan(v) ? NAN : std::max(maxQ(r), std::fabs(v));
            }
        P[h] = Q * impl_->K.topRows(n).transpose();
        M[h] = Q.cwiseAbs() * impl_->absK.topRows(n).transpose();
    }
    for (int32_t r = 0; r < R; ++r) {
        out[r].resize(nVis[r]);
        for (int32_t g = 0; g < nVis[r]; ++g) {
            double Pg[4], Mg[4];
            bool const finite = std::isfinite(impl_->maxK(g)) && std::isfinite(maxQ(r));
            for (int h = 0; h < 4; ++h) {
                Pg[h] = P[h](r, g);
                Mg[h] = finite ? M[h](r, g) : INFINITY;
            }
            out[r][g] = fromDots(Pg, Mg, maxQ(r), impl_->maxK(g), p);
        }
    }
    return out;
}

std::vector<LogitBound> logitBounds(DType dt, uint16_t const* q, uint16_t const* kbar, int32_t n, Params const& p) {
    return KbarRows(dt, kbar, n).bounds(q, n, p);
}

bool tInside(DType dt, uint16_t bits, float lo, float hi) {
    float const v = toFloat(dt, bits);
    return v >= lo && v <= hi; // NaN compares false
}

namespace {

// The contract's order: a before b iff value greater, or equal value and smaller id.
bool before(float va, int32_t a, float vb, int32_t b) {
    return va > vb || (va == vb && a < b);
}

std::string fmtBound(LogitBound const& b) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "[%.9g, %.9g]", b.lo, b.hi);
    return buf;
}

} // namespace

std::string judgeSelection(std::vector<LogitBound> const& bounds, std::vector<int32_t> const& emitted, bool ordered,
                           int32_t kSelArg) {
    int32_t const nVis = static_cast<int32_t>(bounds.size());
    std::vector<char> in(nVis, 0);
    for (int32_t g : emitted) {
        if (g < 0 || g >= nVis)
            return "emitted block " + std::to_string(g) + " is not visible (nVis " + std::to_string(nVis) + ")";
        if (in[g])
            return "block " + std::to_string(g) + " emitted twice";
        in[g] = 1;
    }
    size_t const kSel = kSelArg >= 0 ? size_t(kSelArg) : std::min<size_t>(512, nVis);
    if (emitted.size() != kSel)
        return "emitted " + std::to_string(emitted.size()) + " blocks, kSel is " + std::to_string(kSel);
    if (emitted.empty())
        return "";
    // The last emitted block at the highest value the order allows (ordered), or the emitted set's weakest
    // member at its highest value (a set: any order of emission).
    float lastV = 0;
    int32_t lastId = -1;
    if (ordered) {
        float prevV = INFINITY;
        int32_t prevId = -1;
        for (size_t i = 0; i < emitted.size(); ++i) {
            int32_t const g = emitted[i];
            float v = bounds[g].hi;
            if (i > 0)
                v = std::min(v, g > prevId ? prevV : std::nextafter(prevV, -INFINITY));
            if (v < bounds[g].lo)
                return "rank " + std::to_string(i) + ": block " + std::to_string(g) + " with logit interval " +
                       fmtBound(bounds[g]) + " cannot follow block " + std::to_string(prevId) +
                       " at value <= " + std::to_string(prevV) + " in the order (logit descending, id ascending)";
            prevV = v;
            prevId = g;
        }
        lastV = prevV;
        lastId = prevId;
    } else {
        bool first = true;
        for (int32_t g : emitted)
            if (first || before(lastV, lastId, bounds[g].hi, g)) {
                lastV = bounds[g].hi;
                lastId = g;
                first = false;
            }
    }
    for (int32_t g = 0; g < nVis; ++g)
        if (!in[g] && before(bounds[g].lo, g, lastV, lastId))
            return "block " + std::to_string(g) + " with logit interval " + fmtBound(bounds[g]) +
                   " is not selected but beats selected block " + std::to_string(lastId) + " (at most " +
                   std::to_string(lastV) + " with interval " + fmtBound(bounds[lastId]) + ")";
    return "";
}

bool selectionAmbiguous(std::vector<LogitBound> const& bounds, std::vector<int32_t> const& emitted) {
    int32_t const nVis = static_cast<int32_t>(bounds.size());
    std::vector<char> in(nVis, 0);
    for (int32_t g : emitted)
        if (g >= 0 && g < nVis)
            in[g] = 1;
    // The weakest selected block at its lowest against the strongest other block at its highest.
    int32_t weak = -1, strong = -1;
    for (int32_t g = 0; g < nVis; ++g) {
        if (in[g] && (weak < 0 || before(bounds[weak].lo, weak, bounds[g].lo, g)))
            weak = g;
        if (!in[g] && (strong < 0 || before(bounds[g].hi, g, bounds[strong].hi, strong)))
            strong = g;
    }
    return weak >= 0 && strong >= 0 && before(bounds[strong].hi, strong, bounds[weak].lo, weak);
}

std::vector<bool> straddlesThreshold(std::vector<LogitBound> const& bounds, int32_t kSel) {
    int32_t const n = static_cast<int32_t>(bounds.size());
    // Keys (value, -id) so that "a before b" is "key(a) > key(b)".
    std::vector<std::pair<float, int32_t>> los(n), his(n);
    for (int32_t g = 0; g < n; ++g) {
        los[g] = {bounds[g].lo, -g};
        his[g] = {bounds[g].hi, -g};
    }
    std::sort(los.begin(), los.end());
    std::sort(his.begin(), his.end());
    auto countAbove = [](std::vector<std::pair<float, int32_t>> const& v, std::pair<float, int32_t> k) {
        return static_cast<int32_t>(v.end() - std::upper_bound(v.begin(), v.end(), k));
    };
    std::vector<bool> out(n);
    for (int32_t g = 0; g < n; ++g) {
        // Surely ranked above g: others at their lowest still before g at its highest (g itself never is).
        int32_t const sure = countAbove(los, {bounds[g].hi, -g});
        // Possibly above g: others at their highest before g at its lowest (g itself is iff hi > lo).
        int32_t const maybe = countAbove(his, {bounds[g].lo, -g}) - (bounds[g].hi > bounds[g].lo ? 1 : 0);
        bool const surelyIn = maybe < kSel, surelyOut = sure >= kSel;
        out[g] = !surelyIn && !surelyOut;
    }
    return out;
}

} // namespace fast
} // namespace ref
} // namespace qsa

// Profile `fast` (../shared/CONTRACT.md section 9): intervals PROVEN to contain every result that the
// freedoms F1-F5 allow, per stage output element, from the stage's exact inputs. The derivations are in
// enclosure.cc next to each bound (and summarized in reference/README.md, "Profile fast"); the test
// //reference:enclosure_test checks them against many concrete `fast` evaluations and fails when a bound is
// planted too tight (Params::planted*).
//
// Conventions. Every interval is over the reals; an output element is JUDGED iff its interval is finite (no
// NaN and no infinity reachable); an unjudged element is counted, never passed silently. T outputs are
// judged on T values: the stage's FP32 result v lies in [lo, hi], so v lies in [rd32(lo), ru32(hi)] and, the
// cast being monotone, its T value lies in [RNE_T(rd32(lo)), RNE_T(ru32(hi))] (a subset of section 9.2's
// [round-down-to-T(lo), round-up-to-T(hi)]); an interval reaching below the smallest normal also admits
// zeros of either sign (F5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/qsaReference.h"

namespace qsa {
namespace ref {
namespace fast {

struct Params {
    double epsR = 0x1p-21; // F3: relative error of 1/sqrt(v) for positive normal v (the profile's parameter)
    // Test hooks only: 0 plants a bound that ignores the rounding errors of F1/F4 (gammaScale) or F3's rsqrt
    // error (epsR = 0); enclosure_test shows concrete fast evaluations then fall outside.
    double gammaScale = 1.0;
};

// "2^-21" for the default, else the value in %g: printed in every verdict.
std::string describeEpsR(double epsR);

// Closed interval of reals; ok == false: unbounded or NaN reachable (the element is unjudged).
struct Interval {
    double lo = 0, hi = 0;
    bool ok = true;
};

// T bounds of one 128-element normRope output (qNormed head, kbar row). judged[d] false: unjudged.
struct RowBounds {
    float lo[128], hi[128];   // T values as float
    float fLo[128], fHi[128]; // the FP32 results before the cast (what the T bounds are the casts of)
    bool judged[128];
};

// K1a / B1 q: one head of one row (x = the 128 raw T bits of q head h), with gamma wQ and the row's cosSin.
RowBounds qBounds(DType dt, uint16_t const* x, uint16_t const* w, float const* cosSinRow, float rmsEps,
                  Params const& p = {});
// K1b / B1 completion: kbar of a block from its four raw k rows (T bits; a row read as +0.0 is all zeros),
// with the T-rounded block mean (section 9.1 keeps that cast exact), gamma wK and cosSin row 4g.
RowBounds kbarBounds(DType dt, uint16_t const* const k[4], uint16_t const* w, float const* cosSinRow, float rmsEps,
                     Params const& p = {});

// E2: the logit of (q row, kbar) from the implementation's OWN T values: q = 4 x 128 T bits, kbar 128 T bits.
// Bounds are FP32 values (rd32 / ru32 of the real interval; lo >= +0.0); ok false when +inf is reachable.
struct LogitBound {
    float lo = 0, hi = 0;
    bool ok = true;
};
LogitBound logitBound(DType dt, uint16_t const* q, uint16_t const* kbar, Params const& p = {});
// The same for many blocks at once: logits of one q row against kbar rows [n, 128] (Eigen in double).
std::vector<LogitBound> logitBounds(DType dt, uint16_t const* q, uint16_t const* kbar, int32_t n, Params const& p = {});
// A sequence's kbar rows [n, 128] converted once, for the logit bounds of many q rows (prefill).
class KbarRows {
public:
    KbarRows(DType dt, uint16_t const* kbar, int32_t n);
    ~KbarRows();
    KbarRows(KbarRows const&) = delete;
    KbarRows& operator=(KbarRows const&) = delete;
    // Bounds of the logits of q (4 x 128 T bits) against rows [0, nVis).
    std::vector<LogitBound> bounds(uint16_t const* q, int32_t nVis, Params const& p = {}) const;
    // Many q rows at once (one GEMM per head): out[r] = bounds(qRows[r], nVis[r]).
    std::vector<std::vector<LogitBound>> boundsRows(std::vector<uint16_t const*> const& qRows,
                                                    std::vector<int32_t> const& nVis, Params const& p = {}) const;

private:
    struct Impl;
    Impl* impl_;
};

// Whether a T value (bits) is inside [lo, hi] (numerically: +0.0 and -0.0 both match a bound of zero; NaN never).
bool tInside(DType dt, uint16_t bits, float lo, float hi);

// E3: whether `emitted` (blocks in emission order, kSel of them) is the first kSel of the order (value
// descending, id ascending) for SOME values v_g in [lo_g, hi_g] (bounds over the nVis visible blocks).
// Greedy: each emitted block takes the highest value the order still allows; the last must still beat every
// other block at its lowest. Returns "" or what breaks it. `ordered` false: emission order is ascending id
// (decode), only the set is judged.
// kSel < 0: min(512, nVis) (contract section 4); tests pass a smaller one.
std::string judgeSelection(std::vector<LogitBound> const& bounds, std::vector<int32_t> const& emitted, bool ordered,
                           int32_t kSel = -1);
// Whether the intervals leave the selected set open: some non-emitted block could beat an emitted one.
bool selectionAmbiguous(std::vector<LogitBound> const& bounds, std::vector<int32_t> const& emitted);
// Blocks whose intervals straddle the kSel threshold (may or may not be selected for values in the bounds).
std::vector<bool> straddlesThreshold(std::vector<LogitBound> const& bounds, int32_t kSel);

} // namespace fast
} // namespace ref
} // namespace qsa

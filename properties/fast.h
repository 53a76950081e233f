// Profile `fast` (../shared/CONTRACT.md section 9.2) for the properties: the judges E1-E5 of fast_judges.h
// (shared with fixture replay) applied to an implementation's outputs read back through the workspace, plus
// what only a property needs: the per-test floor and the choice of rows to judge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "properties/fast_judges.h"
#include "properties/generators.h"
#include "properties/harness.h"

namespace qsa {
namespace prop {
namespace fast {

// One case of a property (QSA_PROP calls them around every case; endCase only when the case passed): its part
// of the tally decides whether it was well judged (a row and at least a fifth of the elements it met).
void beginCase();
void endCase();

// Makes a case's intervals finite: payloads whose intervals are infinite (huge, inf, NaN in valid rows: kHuge,
// kMixed, kBits) become kNormal, extreme gammas go, and a subnormal or tiny payload gets the default eps when its
// eps is zero or subnormal (F5 may flush every sum of squares and eps to 0: v = 0, 1/sqrt(v) = +inf, nothing judged;
// seen on a chunked case of seed 82505584, all 13 M elements unjudged).
void makeJudgeable(ActSpec& a);
// Before the first case has passed: makeJudgeable, so that a run of a few cases meets the floor by construction,
// not by the draw (the other cases keep every payload).
void judgeableOnFirstCase(ActSpec& a);

// Prints tallyLine(id) plus the well-judged cases when the test judged anything under `fast`, and, at the default
// budget or above (`fullBudget`), fails it when no case was well judged (the floor that keeps a fast check from
// turning vacuous). QSA_PROP calls start() and finish().
void finish(std::string const& id, bool fullBudget);

// Rows worth judging when judging all is too costly: every row when affordable, else sequence ends, chunk
// boundaries and `randomRows` random rows.
std::vector<int64_t> rowsToJudge(ref::PrefillCase const& c, size_t randomRows, uint64_t seed);

} // namespace fast
} // namespace prop
} // namespace qsa

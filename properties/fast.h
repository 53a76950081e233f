// Profile `fast` (../shared/CONTRACT.md section 9.2) for the properties: the judges E1-E5 of fast_judges.h
// (shared with fixture replay) applied to an implementation's outputs read back through the workspace, plus
// what only a property needs: the per-test floor and the choice of rows to judge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "properties/fast_judges.h"
#include "properties/harness.h"

namespace qsa {
namespace prop {
namespace fast {

// Prints tallyLine(id) when the test judged anything under `fast`, and fails it when it judged no row or
// fewer than a fifth of the elements it met (the floor that keeps a fast check from turning vacuous).
// QSA_PROP calls start() and finish().
void finish(std::string const& id);

// Rows worth judging when judging all is too costly: every row when affordable, else sequence ends, chunk
// boundaries and `randomRows` random rows.
std::vector<int64_t> rowsToJudge(ref::PrefillCase const& c, size_t randomRows, uint64_t seed);

} // namespace fast
} // namespace prop
} // namespace qsa

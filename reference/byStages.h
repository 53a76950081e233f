// The prefill pipeline as the literal composition of the stage mirrors, chunk by chunk (contract section 5:
// K1a; K1b / paged K1b + raw-k tail scatter; then per chunk of Rc rows: idsFill, K2, stable descending sort
// of whole rows, K4). Slower than runPrefill (full sorts); the tests hold runPrefill against it.
#pragma once

#include "reference/qsaReference.h"

namespace qsa {
namespace ref {

// rowsPerChunk <= 0 means the contract's Rc (prefillChunkRows).
PrefillResult runPrefillByStages(PrefillCase const& c, int64_t rowsPerChunk = 0);

// The K1 stages of both prefill pipelines over a checked case: K1a, then K1b (paged, with the raw-k tail
// scatter, when c.hasPool). Sizes and writes res.qNormed, res.kbar and, with a pool, res.poolAfter; `fn`
// names the caller in pool errors.
void prefillK1(char const* fn, PrefillCase const& c, PrefillResult& res);

} // namespace ref
} // namespace qsa

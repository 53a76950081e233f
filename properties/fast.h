// Profile `fast` (../shared/CONTRACT.md section 9.2) for the properties: an implementation's outputs judged
// stage by stage through the workspace read-back, with the intervals of reference/enclosure.h.
//   E1  T outputs (K1a/B1 qNormed, K1b kbar, kbar in V-tails) inside their intervals from the exact inputs;
//   E2  decode logits inside their intervals from the implementation's OWN qNormed and V-tail kbar;
//   E3  prefill rows: the emitted blocks are the first kSel of the order for SOME values in the intervals
//       from the implementation's own qNormed and kbar slots;
//   E4  decode rows: exactly the contract's selection of the implementation's own logits;
//   E5  everything section 9.1 keeps exact, bit for bit: zeros of padded rows / invalid blocks, K4 layout and
//       tails, -1 fill, raw-k copies, untouched cells, split counters.
// Each judge returns "" or the first violation (stage, row, element, value and interval) and adds to the
// running test's tally, printed once per test as the QSA_FAST line; a test that judged too little fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "properties/harness.h"
#include "reference/enclosure.h"

namespace qsa {
namespace prop {
namespace fast {

// eps_r of the profile: QSA_FAST_EPS_R (a float, e.g. 4.76837158203125e-07, or "2^-21"), default 2^-21.
ref::fast::Params params();

// The running test's counts (reset by start(), printed and judged by finish(): QSA_PROP does both).
struct Tally {
    int64_t judgedElements = 0, unjudgedElements = 0, judgedRows = 0, ambiguousRows = 0;
};
Tally& tally();
void start();
// Prints "QSA_FAST <id> judged_elements=.. unjudged_elements=.. judged_rows=.. ambiguous_rows=.. eps_r=.."
// when the test judged anything under `fast`, and fails it when it judged no row or fewer than a fifth of
// the elements it met (the floor that keeps a fast check from turning vacuous).
void finish(std::string const& id);

// Prefill: E1 on the qNormed and kbar slots (every row and block), E5 on their exact zeros.
std::string judgePrefillStages(ref::PrefillCase const& c, PrefillOut const& got);
// Prefill rows (b * S + t; empty: every row): E3 and E5 (K4 layout, tail, -1 fill, padded rows all -1).
std::string judgePrefillRows(ref::PrefillCase const& c, PrefillOut const& got, std::vector<int64_t> const& rows);
// Prefill pool: section 3's cells only (checkCellPlan), raw-k copies exact, every written V-tail inside
// its block's kbar interval.
std::string judgePrefillPool(ref::PrefillCase const& c, PrefillOut const& got);
// One decode step (readStages): E1 (B1 q, the completed block's V-tail), E2 (logits), E4 and E5 (K4 row,
// invalid rows, pool cells, split counters).
// hardened: section 8's hardened reading of the pool (a block completed over an unusable K-tail is written
// from +0.0 reads); at core such a V-tail may or may not be written and is not judged.
std::string judgeDecodeStep(ref::DecodeCase const& d, DecodeOut const& got, bool hardened);
// Its parts: B1's q (E1); B2's logits (E2); the rest (completed block's V-tail E1, E4, E5).
std::string judgeDecodeQ(ref::DecodeCase const& d, DecodeOut const& got);
std::string judgeDecodeLogits(ref::DecodeCase const& d, DecodeOut const& got);
std::string judgeDecodeRest(ref::DecodeCase const& d, DecodeOut const& got, bool hardened);

// Logit bounds of prefill row (b, t) from the implementation's own qNormed / kbar slots.
std::vector<ref::fast::LogitBound> prefillRowBounds(ref::PrefillCase const& c, PrefillOut const& got, int32_t b,
                                                    int32_t t);
// E1 on one kbar cell (a V-tail) of block g of sequence b of a prefill case's inputs.
std::string judgePrefillKbarCell(ref::PrefillCase const& c, int32_t b, int32_t g, uint16_t const* cell,
                                 std::string const& where);
// Rows worth judging when judging all is too costly: every row when affordable, else sequence ends, chunk
// boundaries and `randomRows` random rows.
std::vector<int64_t> rowsToJudge(ref::PrefillCase const& c, size_t randomRows, uint64_t seed);

} // namespace fast
} // namespace prop
} // namespace qsa

// The judges E1-E5 of profile `fast` (../shared/CONTRACT.md section 9.2), shared by the properties
// (properties/fast.h adds the per-test floor) and by fixture replay (`qsa replay --profile fast`,
// fixtures/replay_fast.h): an implementation's outputs judged stage by stage with the intervals of
// reference/enclosure.h.
//   E1  T outputs (K1a/B1 qNormed, K1b kbar, kbar in V-tails) inside their intervals from the exact inputs;
//   E2  decode logits inside their intervals from the implementation's OWN qNormed and V-tail kbar;
//   E3  prefill rows: the emitted blocks are the first kSel of the order for SOME values in the intervals
//       from the implementation's own qNormed and kbar slots;
//   E4  decode rows: exactly the contract's selection of the implementation's own logits;
//   E5  everything section 9.1 keeps exact, bit for bit: zeros of padded rows / invalid blocks, K4 layout and
//       tails, -1 fill, raw-k copies, untouched cells, split counters.
// Each judge returns "" or the first violation (stage, row, element, value and interval) and adds to the
// running tally (tally()). The caller guarantees the sizes of the outputs it passes (outputs.h).
// Depends on //reference, //reference:enclosure and the plain output structs only (no gtest, no fixtures).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "properties/outputs.h"
#include "properties/pool_cells.h"
#include "reference/enclosure.h"
#include "reference/qsaReference.h"

namespace qsa {
namespace prop {
namespace fast {

// eps_r given as "2^-21" or as a float (4.76837158203125e-07); a std::runtime_error naming `what` and the
// text unless it is a relative error in (0, 1).
double parseEpsR(std::string const& text, std::string const& what);
// eps_r of the profile: setParams' value when set (`qsa replay --eps-r`), else QSA_FAST_EPS_R, else 2^-21.
ref::fast::Params params();
void setParams(std::optional<ref::fast::Params> p);

// The running counts (reset by start(); printed by tallyLine).
struct Tally {
    int64_t judgedElements = 0, unjudgedElements = 0, judgedRows = 0, ambiguousRows = 0;
};
Tally& tally();
void start();
// "QSA_FAST <id> judged_elements=.. unjudged_elements=.. judged_rows=.. ambiguous_rows=.. eps_r=.."
std::string tallyLine(std::string const& id);

// Prefill: E1 on the qNormed and kbar slots (every row and block), E5 on their exact zeros.
std::string judgePrefillStages(ref::PrefillCase const& c, PrefillOut const& got);
// Its parts: the qNormed slot (K1a) alone; the kbar slot (K1b) alone.
std::string judgePrefillQ(ref::PrefillCase const& c, PrefillOut const& got);
std::string judgePrefillKbar(ref::PrefillCase const& c, PrefillOut const& got);
// Prefill rows (b * S + t; empty: every row): E3 and E5 (K4 layout, tail, -1 fill, padded rows all -1).
std::string judgePrefillRows(ref::PrefillCase const& c, PrefillOut const& got, std::vector<int64_t> const& rows);
// Prefill pool: section 3's cells only (checkCellPlan), raw-k copies exact, every written V-tail inside
// its block's kbar interval.
std::string judgePrefillPool(ref::PrefillCase const& c, PrefillOut const& got);
// One decode step (readStages): E1 (B1 q, the completed block's V-tail), E2 (logits), E4 and E5 (K4 row,
// invalid rows, pool cells, split counters).
// hardened: section 8's hardened reading of the pool (a block completed over an unusable K-tail is written
// from +0.0 reads and judged so); at core that V-tail may or may not be written and is not judged.
std::string judgeDecodeStep(ref::DecodeCase const& d, DecodeOut const& got, bool hardened);
// Its parts: B1's q (E1); B2's logits (E2); what needs neither qNormed nor logits (pool cells, split counters,
// invalid rows all -1, the completed block's V-tail E1); the rows' selection (E4 on got.logits, K4 exact; qNormed
// only for the ambiguity count).
std::string judgeDecodeQ(ref::DecodeCase const& d, DecodeOut const& got);
std::string judgeDecodeLogits(ref::DecodeCase const& d, DecodeOut const& got);
std::string judgeDecodePool(ref::DecodeCase const& d, DecodeOut const& got, bool hardened);
std::string judgeDecodeSelection(ref::DecodeCase const& d, DecodeOut const& got);

// K2 through its stage launcher (contract section 2) on rows [r0, r1): `logits` [(r1 - r0), MB] from `got`'s qNormed
// and kbar (the launchers' own outputs): E2 on every visible entry (never NaN or -0.0), E5 on the rest (invisible
// entries and padded rows exactly -FLT_MAX, section 4).
std::string judgePrefillLogits(ref::PrefillCase const& c, PrefillOut const& got, std::vector<float> const& logits,
                               int64_t r0, int64_t r1);
// Logit bounds of prefill row (b, t) from the implementation's own qNormed / kbar slots.
std::vector<ref::fast::LogitBound> prefillRowBounds(ref::PrefillCase const& c, PrefillOut const& got, int32_t b,
                                                    int32_t t);
// Logit bounds of decode row b from its own qNormed and the V-tails of `pool` (+0.0 where unusable).
std::vector<ref::fast::LogitBound> decodeRowBounds(ref::DecodeCase const& d, std::vector<uint16_t> const& qNormed,
                                                   std::vector<uint16_t> const& pool, int32_t b);
// E1 on one kbar cell (a V-tail) of block g of sequence b of a prefill case's inputs.
std::string judgePrefillKbarCell(ref::PrefillCase const& c, int32_t b, int32_t g, uint16_t const* cell,
                                 std::string const& where);
// The E1 bounds of prefill q row (b, t) head h, and of decode q row b head h.
ref::fast::RowBounds prefillQBounds(ref::PrefillCase const& c, int32_t b, int32_t t, int h);
ref::fast::RowBounds decodeQBounds(ref::DecodeCase const& d, int32_t b, int h);

} // namespace fast
} // namespace prop
} // namespace qsa

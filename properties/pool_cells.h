// The pool cells a run may change (contract section 3) and the canaries the generators put in the pool:
// shared by the properties and by fixture replay under profile `fast` (fast_judges.h), so both judge the
// pool with the same code. No harness, no gtest: //properties:fast_judges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/qsaReference.h"

namespace qsa {
namespace prop {

// The page a table entry names if it may be dereferenced (contract section 3), else -1.
int32_t usablePage(ref::HostPool const& p, int32_t b, int plane, int32_t token);
// Element offset of the indexer tail (column headSize, head 0) of `token`'s row in that page; -1 when it is unusable.
int64_t usableTail(ref::HostPool const& p, int32_t b, int plane, int32_t token);

// kMayWrite: the V-tail of a block whose completing decode step would read a K-tail through an unusable
// entry (a -1 hole under a live block): the +0.0 reads that define its kbar are hardened (contract section
// 8), so at core the cell may be written (with anything) or keep its contents; nothing else may change.
enum class CellRule { kUnchanged, kRawK, kWritten, kMayWrite };
// Per pool element: what a prefill (or one decode step) may do to it. rawK is the bit pattern a
// kRawK cell must hold afterwards (indexed like the pool).
struct CellPlan {
    explicit CellPlan(size_t n) : rule(n, CellRule::kUnchanged), rawK(n, 0) {}
    std::vector<CellRule> rule;
    std::vector<uint16_t> rawK;
};
CellPlan prefillCellPlan(ref::PrefillCase const& c);
// hardened: the completing step of a block whose K page is unusable must write its V-tail (from +0.0 reads,
// contract section 3); core: that V-tail is kMayWrite (section 8: +0.0 reads are a hardened guarantee).
CellPlan decodeCellPlan(ref::DecodeCase const& c, bool hardened);
// Whether a valid row of decode step `c` completes a block whose K page is unusable while its V page is
// usable (the case whose V-tail only the hardened level pins down).
bool completesBlockOverKHole(ref::DecodeCase const& c);
// The violations of a plan ("" when none): before/after pool contents.
std::string checkCellPlan(CellPlan const& plan, std::vector<uint16_t> const& before, std::vector<uint16_t> const& after,
                          ref::PoolDims const& d, ref::DType dt);

// Pool element e as "page P (K plane|V plane) row R head H col C".
std::string poolCell(ref::PoolDims const& d, size_t e);

// Pool canary: a non-canonical NaN of T unique-ish per element (no cast ever produces it).
uint16_t canary(ref::DType dt, size_t element);

} // namespace prop
} // namespace qsa

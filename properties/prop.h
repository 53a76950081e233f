// Shared machinery of the property tests: the QSA_PROP macro (a RapidCheck property with a modest
// default number of cases that RC_PARAMS=max_success=N overrides), row checks of contract section 4,
// bitwise diffs that name the first mismatch, and fixture capture of the shrunk counterexample.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "properties/coverage.h"
#include "properties/fast.h"
#include "properties/generators.h"
#include "properties/harness.h"
#include "reference/qsaReference.h"

namespace qsa {
namespace prop {

// Runs `testable` as RapidCheck does for RC_GTEST_PROP, with maxSuccess(defaultCases * QSA_BUDGET_SCALE)
// cases on the GPU and on the CPU alike (README "Budgets": the CPU variants' listed counts are what fits
// `bazel test //...` in 10 minutes on the 2-core CI machine; .ci/run adds a 10x CPU step); on failure writes
// the captured counterexample as a fixture and prints the command that installs it.
void checkProperty(std::string const& id, int defaultCases, rc::detail::Property const& property);

// Each TEST owns a coverage::Run: cases that pass commit their cover() regions, and the run ends with
// the QSA_COVERAGE line on stdout and a failure when a floor is missed at the default budget (coverage.h).
#define QSA_PROP(Suite, Name, DefaultCases)                                                                            \
    static void qsaProp_##Suite##_##Name();                                                                            \
    TEST(Suite, Name) {                                                                                                \
        ::qsa::prop::fast::start();                                                                                    \
        ::qsa::prop::coverage::Run qsaCoverage_(#Suite "." #Name, (DefaultCases));                                     \
        ::qsa::prop::checkProperty(#Suite "." #Name, (DefaultCases), ::rc::detail::toProperty([] {                     \
                                       ::qsa::prop::fast::beginCase();                                                 \
                                       ::qsa::prop::coverage::runCase(&qsaProp_##Suite##_##Name);                      \
                                       ::qsa::prop::fast::endCase();                                                   \
                                   }));                                                                                \
        ::qsa::prop::coverage::finish(qsaCoverage_);                                                                   \
        ::qsa::prop::fast::finish(#Suite "." #Name, qsaCoverage_.enforced());                                          \
    }                                                                                                                  \
    static void qsaProp_##Suite##_##Name()

// Fails the current property with `msg` when it is not empty.
#define QSA_REQUIRE_EMPTY(msg)                                                                                         \
    do {                                                                                                               \
        std::string const qsaMsg_ = (msg);                                                                             \
        if (!qsaMsg_.empty())                                                                                          \
            RC_FAIL(qsaMsg_);                                                                                          \
    } while (false)

// Remembers the cases of one property execution; when the execution fails (an RC_ASSERT / RC_FAIL is
// unwinding), they become the test's capture candidate (the last failing execution is the shrunk one).
class Capture {
public:
    Capture(char const* contract, std::string description);
    // The same, with `cases` added at once.
    template <typename... Cases>
    Capture(char const* contract, std::string description, Cases const&... cases)
        : Capture(contract, std::move(description)) {
        (add(cases), ...);
    }
    ~Capture();
    Capture(Capture const&) = delete;
    Capture& operator=(Capture const&) = delete;
    void add(ref::PrefillCase const& c) { prefill_.push_back(&c); }
    void add(ref::DecodeCase const& c) { decode_.push_back(&c); }

private:
    char const* contract_;
    std::string description_;
    int uncaught_;
    std::vector<ref::PrefillCase const*> prefill_;
    std::vector<ref::DecodeCase const*> decode_;
};

// ---- contract section 4 row checks --------------------------------------------------------------

// The violations of K4's consequences in one output row (empty when none). `t` is the query position,
// `valid` whether the row is a real token (t < ctx). Decode rows (ascendingBlocks) emit blocks in
// ascending id.
std::string rowLayoutViolation(int32_t const* row, int32_t t, bool valid, bool ascendingBlocks);

// The selected blocks (sorted ascending) and the tail of a valid row.
struct RowSelection {
    std::vector<int32_t> blocks;
    std::vector<int32_t> tail;
    bool operator==(RowSelection const& o) const { return blocks == o.blocks && tail == o.tail; }
};
RowSelection selectionOf(int32_t const* row, int32_t t);
std::string show(RowSelection const& s);

// ---- diffs -----------------------------------------------------------------------------------------

// "" when equal; else the first differing row (b, t) and column with both values and how many differ.
std::string diffOutIdx(std::vector<int32_t> const& got, std::vector<int32_t> const& want, int32_t S, char const* what);
// Pool contents: the first differing element as (page, row, head, col) with both bit patterns.
std::string diffPool(std::vector<uint16_t> const& got, std::vector<uint16_t> const& want, ref::PoolDims const& d,
                     char const* what);
// poolCell (pool element e as "page P (K plane|V plane) row R head H col C"): pool_cells.h.
// Rows [0, rows) of sequence `from` of `a` (seqLen sa) equal rows of sequence `to` of `b` (seqLen sb): "" when they
// do, else "<what>: sequence <from> row t=.. col ..: <a's> vs <b's>" for the first entry that differs.
std::string diffSequence(PrefillOut const& a, int32_t sa, int32_t from, PrefillOut const& b, int32_t sb, int32_t to,
                         int32_t rows, char const* what);

// ---- stage outputs read back from the workspace (contract section 6, last paragraph) ------------------

// The reference's K1a and K1b outputs of a prefill case (reference/stages.h mirrors, O(B*S) work: cheap
// even where the full reference pipeline is not, so every row is compared in every case).
struct PrefillStages {
    std::vector<uint16_t> qNormed; // [B, S, 4, 128]: zeros for padded rows
    std::vector<uint16_t> kbar;    // [B, MB, 128]: zeros for invalid blocks
};
PrefillStages referencePrefillStages(ref::PrefillCase const& c);

// Bitwise diffs of the workspace read-back (RunOptions::readStages) against `want` (the reference's unless
// `against` names another source, e.g. "run 0" where two runs of the implementation must agree): "" when equal,
// else a message naming the stage (K1a / K1b / B1 / B2), the slot, the row (b,t,h / b,g / b,h / b), the
// first differing element with both bit patterns, and how many elements and rows differ.
// Prefill: qNormed for every row (zeros for padded rows), kbar for every block (zeros for invalid ones).
std::string diffPrefillStages(ref::PrefillCase const& c, PrefillOut const& got, PrefillStages const& want,
                              char const* against = "the reference");
// Decode: qNormed for every row (zeros for invalid rows); logits g < ctx / 4 of every valid row only.
std::string diffDecodeStages(ref::DecodeCase const& c, DecodeOut const& got, ref::DecodeResult const& want,
                             char const* against = "the reference");
// Decode B2 alone (the second half of diffDecodeStages).
std::string diffDecodeLogits(ref::DecodeCase const& c, DecodeOut const& got, ref::DecodeResult const& want,
                             char const* against = "the reference");

// When a full reference run is too costly: the rows worth checking (chunk boundaries, multiples of Rc +- 2,
// sequence starts and ends, block and page boundaries, `randomRows` random rows drawn from `seed`) compared
// with ref::runPrefillRows; "" when equal, else "<what> b=.. t=.. differs (Rc=..)" for the first that differs.
std::string sampledRowsMismatch(ref::PrefillCase const& c, std::vector<int32_t> const& got, size_t randomRows,
                                uint64_t seed, char const* what);
// Whether the full reference pipeline is affordable for this case on this machine.
bool fullReferenceAffordable(ref::PrefillCase const& c);

} // namespace prop
} // namespace qsa

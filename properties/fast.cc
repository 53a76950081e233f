// Profile `fast` for the properties (fast.h; contract section 9.2): the floor and the rows to judge. The judges
// themselves are fast_judges.cc.
#include "properties/fast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "reference/rowops.h"
#include "testing/rng.h"

namespace qsa {
namespace prop {
namespace fast {

namespace {

// The tally when the current case began, and the cases so far (passed ones) and those among them that judged
// a row and at least a fifth of the elements they met.
struct CaseFloor {
    Tally atBegin;
    int64_t cases = 0, wellJudged = 0;
};
CaseFloor& caseFloor() {
    static CaseFloor f;
    return f;
}

} // namespace

void beginCase() {
    caseFloor().atBegin = tally();
}

void endCase() {
    CaseFloor& f = caseFloor();
    Tally const& t = tally();
    int64_t const judged = t.judgedElements - f.atBegin.judgedElements;
    int64_t const all = judged + t.unjudgedElements - f.atBegin.unjudgedElements;
    ++f.cases;
    if (t.judgedRows > f.atBegin.judgedRows && judged > 0 && 5 * judged >= all)
        ++f.wellJudged;
}

void makeJudgeable(ActSpec& a) {
    if (a.payload == Payload::kHuge || a.payload == Payload::kMixed || a.payload == Payload::kBits)
        a.payload = Payload::kNormal;
    a.extremeGamma = false;
    if ((a.payload == Payload::kSubnormal || a.payload == Payload::kTiny) && (a.epsBits & 0x7F800000u) == 0)
        a.epsBits = ActSpec{}.epsBits;
}

void judgeableOnFirstCase(ActSpec& a) {
    if (caseFloor().cases == 0)
        makeJudgeable(a);
}

void finish(std::string const& id, bool fullBudget) {
    Tally const& t = tally();
    CaseFloor const f = caseFloor();
    caseFloor() = CaseFloor{};
    int64_t const all = t.judgedElements + t.unjudgedElements;
    if (all == 0 && t.judgedRows == 0)
        return; // not a fast check, or not judged
    std::string const line = tallyLine(id) + " well_judged_cases=" + std::to_string(f.wellJudged) + "/" +
                             std::to_string(f.cases) + (fullBudget ? " floor=enforced" : " floor=skipped(budget)");
    std::cout << line << std::endl;
    // The floor (section 9.2): a fast check none of whose cases judged a row and a fifth of the elements it met is
    // vacuous. Per case, not over the whole run: the generators put NaN / inf / huge payloads into a share of the
    // valid rows on purpose (their intervals are not finite, so a whole case may go unjudged), and a run of a few
    // cases would otherwise fail by the draw. Enforced, like the coverage floors, only at the default budget or
    // above (a reduced budget, e.g. the mutant matrix's FAST_SCALE, has too few cases to expect one).
    if (fullBudget && !::testing::Test::HasFailure() && f.wellJudged == 0)
        ADD_FAILURE() << "QSA_FAST_FLOOR " << id << ": no case judged a row and a fifth of its elements under "
                      << "profile fast (" << line << ")";
}

std::vector<int64_t> rowsToJudge(ref::PrefillCase const& c, size_t randomRows, uint64_t seed) {
    int32_t const S = c.seqLen, MB = (S + 3) / 4;
    std::vector<int64_t> rows;
    // Every row when the interval products stay below ~2^24 (row, block) pairs (a fraction of a second).
    if (int64_t(c.batchSize) * S * MB / 2 <= (int64_t(1) << 24)) {
        for (int64_t r = 0; r < int64_t(c.batchSize) * S; ++r)
            rows.push_back(r);
        return rows;
    }
    int64_t const Rc = ref::prefillChunkRows(c.batchSize, S), n = int64_t(c.batchSize) * S;
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = ref::caseCtx(c, b);
        for (int32_t t : {0, 3, ctx - 5, ctx - 4, ctx - 2, ctx - 1, ctx, S - 1})
            if (t >= 0 && t < S)
                rows.push_back(int64_t(b) * S + t);
    }
    for (int64_t r = Rc; r < n; r += Rc)
        for (int64_t d : {-2, -1, 0, 1})
            if (r + d >= 0 && r + d < n)
                rows.push_back(r + d);
    testlib::Rng rng(seed ^ 0xFA57);
    for (size_t i = 0; i < randomRows; ++i)
        rows.push_back(rng.below(n));
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

} // namespace fast
} // namespace prop
} // namespace qsa

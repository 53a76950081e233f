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

int32_t ctxOf(ref::PrefillCase const& c, int32_t b) {
    return std::min(std::max(c.contextLengths[b], 0), c.seqLen);
}

} // namespace

void finish(std::string const& id) {
    Tally const& t = tally();
    int64_t const all = t.judgedElements + t.unjudgedElements;
    if (all == 0 && t.judgedRows == 0)
        return; // not a fast check, or not judged
    std::string const line = tallyLine(id);
    std::cout << line << std::endl;
    // The floor (section 9.2): a fast check that judged no row, or less than a fifth of the elements it met, is
    // vacuous. (The generators put NaN / inf / huge payloads into a share of the valid rows on purpose: their
    // intervals are not finite, so a fifth, not all.)
    if (t.judgedRows == 0 || 5 * t.judgedElements < all)
        ADD_FAILURE() << "QSA_FAST_FLOOR " << id << ": judged too little under profile fast (" << line << ")";
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
        int32_t const ctx = ctxOf(c, b);
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

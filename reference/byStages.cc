// Literal chunked prefill from the stage mirrors. See byStages.h.
#include "reference/byStages.h"

#include "reference/numerics.h"
#include "reference/pool.h"
#include "reference/stages.h"

#include <algorithm>
#include <stdexcept>

namespace qsa {
namespace ref {

void prefillK1(char const* fn, PrefillCase const& c, PrefillResult& res) {
    int32_t const B = c.batchSize;
    int32_t const S = c.seqLen;
    int32_t const mb = (S + 3) / 4;
    res.qNormed.assign(static_cast<size_t>(B) * S * 512, 0);
    res.kbar.assign(static_cast<size_t>(B) * mb * 128, 0);
    qPrep(c.dtype, res.qNormed.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wQ.data(),
          c.rmsEps, B, S);
    if (c.hasPool) {
        res.poolAfter = c.pool.data;
        PoolView const view = viewOf(fn, c.pool, B, res.poolAfter);
        kCompressPaged(c.dtype, res.kbar.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(),
                       c.wK.data(), c.rmsEps, B, S, mb, 0, mb, 0, view);
        rawKTailScatter(c.dtype, c.indexQk.data(), c.contextLengths.data(), B, S, view);
    } else {
        kCompress(c.dtype, res.kbar.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wK.data(),
                  c.rmsEps, B, S, mb, 0, mb, 0);
    }
}

PrefillResult runPrefillByStages(PrefillCase const& c, int64_t rowsPerChunk) {
    FpEnvGuard guard;
    int32_t const B = c.batchSize;
    int32_t const S = c.seqLen;
    if (B <= 0 || S <= 0 || c.indexQk.size() != static_cast<size_t>(B) * S * kQkWidth ||
        c.contextLengths.size() != static_cast<size_t>(B) || c.cosSin.size() < static_cast<size_t>(S) * 64) {
        throw std::runtime_error("runPrefillByStages: inconsistent case sizes");
    }
    int32_t const mb = (S + 3) / 4;
    int64_t const rows = static_cast<int64_t>(B) * S;
    PrefillResult res;
    res.outIdx.assign(static_cast<size_t>(rows) * kIndexWidth, 0);
    prefillK1("runPrefillByStages", c, res);
    if (c.keepLogits) {
        res.logits.assign(static_cast<size_t>(rows) * mb, 0.0f);
    }
    int64_t const rc = rowsPerChunk > 0 ? rowsPerChunk : prefillChunkRows(B, S);
    for (int64_t r0 = 0; r0 < rows; r0 += rc) {
        int32_t const n = static_cast<int32_t>(std::min(rc, rows - r0));
        size_t const elems = static_cast<size_t>(n) * mb;
        std::vector<int32_t> ids(elems);
        std::vector<int32_t> idsSorted(elems);
        std::vector<float> logits(elems);
        std::vector<float> logitsSorted(elems);
        idsFill(ids.data(), n, mb);
        scores(c.dtype, logits.data(), res.qNormed.data(), res.kbar.data(), c.contextLengths.data(), B, S,
               static_cast<int32_t>(r0), static_cast<int32_t>(r0 + n));
        sortRows(logits.data(), logitsSorted.data(), ids.data(), idsSorted.data(), n, mb);
        expand(res.outIdx.data(), idsSorted.data(), c.contextLengths.data(), B, S, static_cast<int32_t>(r0),
               static_cast<int32_t>(r0 + n));
        if (c.keepLogits) {
            std::copy(logits.begin(), logits.end(), res.logits.begin() + r0 * mb);
        }
    }
    return res;
}

} // namespace ref
} // namespace qsa

// Contract 7.5 (batch invariance): a sequence's rows do not depend on the other sequences of the batch,
// on S >= ctx (more padding), on where the Rc chunk boundaries fall (moved by changing B * S), nor on
// whether a pool is given (section 5: outIdx identical with and without a pool).
#include <algorithm>

#include "properties/cases.h"

namespace qsa {
namespace prop {
namespace {

QSA_PROP(BatchInvariance, SequenceAloneVsInBatch, 60) {
    SpecOptions o;
    o.tieBias = true;
    o.shares = defaultShares(true);
    PrefillSpec const spec = *genPrefillSpec(o);
    ref::PrefillCase const c = toCase(spec);
    coverPrefill(prefillRegions(c), nVisFloor(), kChunkedFloor);
    int32_t const b = *flatRange<int32_t>(0, spec.B);
    int32_t const extraS = implOnGpu() ? *pick<int32_t>(0, 1, 3, 4, 128, 2049) : *pick<int32_t>(0, 1, 3, 4, 5, 128);
    int32_t const newS = std::min<int32_t>(spec.S + extraS, spec.S <= 2048 ? 4200 : spec.S);
    RC_LOG() << "sequence b=" << b << " alone with S'=" << newS << "\n";
    ref::PrefillCase const alone = subBatch(c, {b}, newS, spec.act);
    Capture cap("batch_invariance", describe(spec), c, alone);
    PrefillOut const all = runImplPrefill(c);
    QSA_REQUIRE_EMPTY(diffSequence(all, spec.S, b, runImplPrefill(alone), newS, 0, spec.S, "in batch vs alone"));
}

// Other sequences before and after it move the chunk boundaries (Rc rows) through the sequence.
QSA_PROP(BatchInvariance, ChunkBoundariesMoved, 40) {
    SpecOptions o;
    o.tieBias = true;
    o.shares = defaultShares(true);
    o.shares.chunked = implOnGpu() ? 30 : 15; // the property's own region: boundaries that really move
    PrefillSpec const spec = *genPrefillSpec(o);
    ref::PrefillCase const c = toCase(spec);
    // The sequences of the new batch: a chunked case keeps all of them (reversed, so that every boundary
    // falls on other rows of each sequence); otherwise a flat-length selection.
    std::vector<int32_t> order;
    if (ref::prefillChunkRows(c.batchSize, c.seqLen) < int64_t(c.batchSize) * c.seqLen) {
        for (int32_t b = spec.B - 1; b >= 0; --b)
            order.push_back(b);
    } else {
        int32_t const n = *flatRange<int32_t>(1, std::min(spec.B, 16) + 1);
        for (int32_t i = 0; i < n; ++i)
            order.push_back(*flatRange<int32_t>(0, spec.B));
    }
    int64_t const maxB = std::max<int64_t>(1, defaultBudget().largePairs / (int64_t(spec.S) * ((spec.S + 3) / 4)));
    if (spec.regime != Regime::kChunked && int64_t(order.size()) > std::min<int64_t>(maxB, 16))
        order = {spec.B - 1};
    std::vector<int32_t> shuffled = order;
    std::rotate(shuffled.begin(), shuffled.begin() + shuffled.size() / 2, shuffled.end());
    ref::PrefillCase const a = subBatch(c, order, spec.S, spec.act);
    ref::PrefillCase const b = subBatch(c, shuffled, spec.S, spec.act);
    PrefillRegions const regions = prefillRegions(c);
    coverPrefill(regions, nVisFloor(), 0.0);
    // Boundaries moved: the original or a rearranged batch is chunked (rows of a sequence change chunk).
    coverage::cover("boundaries_moved", regions.chunked || prefillRegions(a).chunked || prefillRegions(b).chunked,
                    0.10);
    RC_LOG() << "batches " << order.size() << " sequences, Rc=" << ref::prefillChunkRows(a.batchSize, a.seqLen)
             << " vs the original's " << ref::prefillChunkRows(c.batchSize, c.seqLen) << "\n";
    Capture cap("batch_invariance", describe(spec), a, b);
    PrefillOut const ref0 = runImplPrefill(c), ra = runImplPrefill(a), rb = runImplPrefill(b);
    for (size_t i = 0; i < order.size(); ++i) {
        QSA_REQUIRE_EMPTY(diffSequence(ra, spec.S, int32_t(i), ref0, spec.S, order[i], spec.S, "reordered batch"));
        QSA_REQUIRE_EMPTY(diffSequence(rb, spec.S, int32_t(i), ref0, spec.S, shuffled[i], spec.S, "rotated batch"));
    }
}

// Valid page tables (core) and hostile ones (hardened: out-of-plane ids, truncated tables) separately.
void poolDoesNotChangeOutIdx(bool hostile) {
    SpecOptions o;
    o.pool = true;
    o.hostilePool = hostile;
    PrefillSpec const spec = *genPrefillSpec(o);
    ref::PrefillCase const c = toCase(spec);
    coverPrefill(prefillRegions(c), nVisFloor(), 0.0);
    ref::PrefillCase noPool = c;
    noPool.hasPool = false;
    noPool.pool = ref::HostPool{};
    Capture cap("batch_invariance", describe(spec), c);
    QSA_REQUIRE_EMPTY(
        diffOutIdx(runImplPrefill(c).outIdx, runImplPrefill(noPool).outIdx, c.seqLen, "with pool vs without"));
}

QSA_PROP(BatchInvariance, PoolDoesNotChangeOutIdx, 20) {
    poolDoesNotChangeOutIdx(false);
}

QSA_PROP(BatchInvariance, HostilePoolDoesNotChangeOutIdx, 20) {
    poolDoesNotChangeOutIdx(true);
}

} // namespace
} // namespace prop
} // namespace qsa

// Contract 7.6 (prefill/decode equivalence): with a page table without holes, a prefill of L tokens with a
// pool followed by decode steps to L + n selects, at every step, the same block SET and tail as row
// L + k - 1 of a prefill of L + n tokens, and leaves the LIVE indexer cells (V-tails of complete blocks,
// K-tails of the trailing incomplete block) bit-identical to that prefill's. Includes nVis > 512 with ties
// at the selection threshold (B3's radix select against the sort) and steps across 128-token pages.
#include <algorithm>

#include "properties/cases.h"

namespace qsa {
namespace prop {
namespace {

void checkChain(DecodeChainSpec const& spec, double nVis, double tieFloor) {
    Chain ch = makeChain(spec);
    coverDecode(decodeRegions(ch.steps), nVis);
    Capture cap("prefill_decode", describe(spec), ch.prefillFull);
    PrefillOut const full = runImplPrefill(ch.prefillFull);
    std::vector<uint16_t> pool = runImplPrefill(ch.prefillL).pool;
    int32_t const S = ch.prefillFull.seqLen;
    bool tie = false;
    for (size_t k = 0; k < ch.steps.size(); ++k) {
        ref::DecodeCase& d = ch.steps[k];
        d.pool.data = pool;
        cap.add(d);
        DecodeOut const got = runImplDecode(d);
        if (tieFloor > 0.0) {
            // Ties across ranks 512/513 among this step's logits (the reference's, never the implementation's).
            ref::DecodeResult const want = ref::runDecode(d);
            for (int32_t b = 0; b < spec.B; ++b)
                tie |= tiesAtRank(&want.logits[size_t(b) * d.maxBlocks], d.contextLengths[b] / 4);
        }
        for (int32_t b = 0; b < spec.B; ++b) {
            int32_t const t = d.contextLengths[b] - 1;
            RowSelection const dec = selectionOf(&got.outIdx[size_t(b) * ref::kIndexWidth], t);
            RowSelection const pre = selectionOf(&full.outIdx[(size_t(b) * S + t) * ref::kIndexWidth], t);
            if (!(dec == pre)) {
                RC_FAIL("step " + std::to_string(k) + " sequence " + std::to_string(b) + " (t=" + std::to_string(t) +
                        ", nVis=" + std::to_string((t + 1) / 4) + "): decode selects " + show(dec) +
                        " but prefill row selects " + show(pre));
            }
        }
        pool = got.pool;
    }
    std::vector<int32_t> totals;
    for (int32_t L : spec.L)
        totals.push_back(L + spec.steps);
    QSA_REQUIRE_EMPTY(diffLiveCells(ch.prefillFull.pool, totals, pool, full.pool));
    if (tieFloor > 0.0)
        coverage::cover("tie_at_rank_512", tie, tieFloor);
}

QSA_PROP(PrefillDecode, StepsMatchPrefillRows, 60) {
    checkChain(*genDecodeChainSpec(implOnGpu() ? 1100 : 300, 9, true, false), nVisFloor(), 0.0);
}

// nVis > 512 at every step, with heavy ties so that the 512th and 513th blocks share a logit.
QSA_PROP(PrefillDecode, TiesAtTheSelectionThreshold, 6) {
    DecodeChainSpec spec;
    spec.B = *flatRange<int32_t>(1, implOnGpu() ? 4 : 2);
    // ctx >= 2052 from the first step on (nVis >= 513), so that every step selects.
    spec.L = *rc::gen::container<std::vector<int32_t>>(size_t(spec.B), flatRange<int32_t>(2051, 2062));
    spec.steps = *flatRange<int32_t>(1, implOnGpu() ? 10 : 5);
    spec.act = *genActSpec(true, false);
    // Tie modes whose logits tie across ranks 512/513 for nVis in [513, 520]: d repeated kbar rows (groups of
    // ~nVis/d equal logits; the last group spans rank 512), or all logits +0.0.
    spec.act.ties = *pick(Ties::kDupBlocks, Ties::kNegativeDots, Ties::kDupBlocks, Ties::kDeadGammaK);
    spec.act.distinctBlocks = *flatRange<int32_t>(1, 5);
    spec.act.rope = Rope::kIdentity;
    spec.act.extremeGamma = false;
    spec.pool = *genPoolSpec(false, int64_t(spec.B) * 2080);
    spec.splitCounters = true;
    spec.regime = Regime::kManyBlocks;
    checkChain(spec, 1.0, kThresholdTieFloor);
}

} // namespace
} // namespace prop
} // namespace qsa

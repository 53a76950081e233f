// Contract 7.6 (prefill/decode equivalence): with a page table without holes, a prefill of L tokens with a
// pool followed by decode steps to L + n selects, at every step, the same block SET and tail as row
// L + k - 1 of a prefill of L + n tokens, and leaves the LIVE indexer cells (V-tails of complete blocks,
// K-tails of the trailing incomplete block) bit-identical to that prefill's. Includes nVis > 512 with ties
// at the selection threshold (B3's radix select against the sort) and steps across 128-token pages.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "properties/cases.h"

namespace qsa {
namespace prop {
namespace {

// Profile `ieee` (fastProfile false): every step's set and tail equal the prefill row's, and the live cells are
// bit-identical. Profile `fast` (contract section 9.2): the decode step's set and the prefill row's set may differ
// only in blocks whose intervals straddle the kSel threshold. The intervals: the prefill row's E2 intervals (from the
// prefill's own qNormed and kbar slots) widened to hold the decode step's own logits (read back), so that both
// runs' values lie in them; tails and the live K-tails stay exact, live V-tails inside their E1 intervals.
void checkChain(DecodeChainSpec const& spec, double nVis, double tieFloor, bool fastProfile = false) {
    Chain ch = makeChain(spec);
    coverDecode(decodeRegions(ch.steps), nVis);
    Capture cap("prefill_decode", describe(spec), ch.prefillFull);
    RunOptions ro;
    ro.readStages = fastProfile;
    PrefillOut const full = runImplPrefill(ch.prefillFull, ro);
    std::vector<uint16_t> pool = runImplPrefill(ch.prefillL).pool;
    int32_t const S = ch.prefillFull.seqLen;
    bool tie = false, straddled = false;
    for (size_t k = 0; k < ch.steps.size(); ++k) {
        ref::DecodeCase& d = ch.steps[k];
        d.pool.data = pool;
        cap.add(d);
        DecodeOut const got = runImplDecode(d, ro);
        if (!fastProfile && tieFloor > 0.0) {
            // Ties across ranks 512/513 among this step's logits (the reference's, never the implementation's).
            ref::DecodeResult const want = ref::runDecode(d);
            for (int32_t b = 0; b < spec.B; ++b)
                tie |= tiesAtRank(&want.logits[size_t(b) * d.maxBlocks], d.contextLengths[b] / 4);
        }
        for (int32_t b = 0; b < spec.B; ++b) {
            int32_t const t = d.contextLengths[b] - 1, nv = (t + 1) / 4, kSel = std::min(ref::kBlockTopK, nv);
            RowSelection const dec = selectionOf(&got.outIdx[size_t(b) * ref::kIndexWidth], t);
            RowSelection const pre = selectionOf(&full.outIdx[(size_t(b) * S + t) * ref::kIndexWidth], t);
            std::string const where = "step " + std::to_string(k) + " sequence " + std::to_string(b) +
                                      " (t=" + std::to_string(t) + ", nVis=" + std::to_string(nv) + ")";
            if (!fastProfile) {
                if (!(dec == pre))
                    RC_FAIL(where + ": decode selects " + show(dec) + " but prefill row selects " + show(pre));
                continue;
            }
            float const* logits = &got.logits[size_t(b) * d.maxBlocks];
            tie |= tiesAtRank(logits, nv);
            if (dec.tail != pre.tail)
                RC_FAIL(where + ": decode tail " + show(dec) + " differs from the prefill row's " + show(pre));
            ++fast::tally().judgedRows;
            if (dec == pre)
                continue;
            std::vector<ref::fast::LogitBound> bounds = fast::prefillRowBounds(ch.prefillFull, full, b, t);
            for (int32_t g = 0; g < nv; ++g) {
                if (std::isnan(logits[g]))
                    RC_FAIL(where + ": decode logit of block " + std::to_string(g) + " is NaN");
                bounds[g].lo = std::min(bounds[g].lo, logits[g]);
                bounds[g].hi = std::max(bounds[g].hi, logits[g]);
            }
            std::vector<bool> const straddles = ref::fast::straddlesThreshold(bounds, kSel);
            std::vector<int32_t> diff;
            std::set_symmetric_difference(dec.blocks.begin(), dec.blocks.end(), pre.blocks.begin(), pre.blocks.end(),
                                          std::back_inserter(diff));
            for (int32_t g : diff)
                if (g < 0 || g >= nv || !straddles[g])
                    RC_FAIL(where + ": block " + std::to_string(g) + " is selected by " +
                            (std::binary_search(dec.blocks.begin(), dec.blocks.end(), g) ? "decode" : "prefill") +
                            " only, but its interval (prefill row's E2 interval widened to the decode logit) [" +
                            std::to_string(g < nv ? bounds[g].lo : 0) + ", " +
                            std::to_string(g < nv ? bounds[g].hi : 0) +
                            "] does not straddle the kSel threshold (profile fast, eps_r " +
                            ref::fast::describeEpsR(fast::params().epsR) + ")");
            straddled = true;
            ++fast::tally().ambiguousRows;
        }
        pool = got.pool;
    }
    std::vector<int32_t> totals;
    for (int32_t L : spec.L)
        totals.push_back(L + spec.steps);
    // Live cells: K-tails of the trailing incomplete block are raw copies (exact); under `fast`, V-tails of complete
    // blocks, written by the prefill or by a decode step, inside their blocks' E1 intervals, and diffLiveCells on
    // the K-tails only: the prefill's V-tails replaced by the chain's (judged here).
    ref::PrefillCase const& c = ch.prefillFull;
    std::vector<uint16_t> bfull = full.pool;
    for (int32_t b = 0; fastProfile && b < spec.B; ++b) {
        for (int32_t g = 0; 4 * g + 3 < totals[b]; ++g) {
            int64_t const e = usableTail(c.pool, b, 1, 4 * g);
            if (e < 0)
                continue;
            std::string const where = "live V-tail of block " + std::to_string(g) + " sequence " + std::to_string(b);
            QSA_REQUIRE_EMPTY(fast::judgePrefillKbarCell(c, b, g, &pool[e], where + " after the decode chain"));
            QSA_REQUIRE_EMPTY(fast::judgePrefillKbarCell(c, b, g, &full.pool[e], where + " after the prefill"));
            std::copy(pool.begin() + e, pool.begin() + e + 128, bfull.begin() + e);
        }
    }
    QSA_REQUIRE_EMPTY(diffLiveCells(c.pool, totals, pool, bfull));
    if (fastProfile || tieFloor > 0.0)
        coverage::cover("tie_at_rank_512", tie, tieFloor);
    if (fastProfile)
        coverage::cover("sets_differ_within_straddle", straddled);
}

QSA_PROP(PrefillDecode, StepsMatchPrefillRows, 60) {
    checkChain(*genDecodeChainSpec(implOnGpu() ? 1100 : 300, 9, true, false), nVisFloor(), 0.0);
}

// nVis > 512 at every step, with heavy ties so that the 512th and 513th blocks share a logit: the spec of
// TiesAtTheSelectionThreshold and its fast twin.
DecodeChainSpec thresholdTieSpec() {
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
    return spec;
}

QSA_PROP(PrefillDecode, TiesAtTheSelectionThreshold, 6) {
    checkChain(thresholdTieSpec(), 1.0, kThresholdTieFloor);
}

QSA_PROP(PrefillDecode, StepsMatchPrefillRowsFast, implOnGpu() ? 60 : 20) {
    checkChain(*genDecodeChainSpec(implOnGpu() ? 1100 : 300, 9, true, false), nVisFloor(), 0.0, true);
}

QSA_PROP(PrefillDecode, TiesAtTheSelectionThresholdFast, 6) {
    // The first case draws judgeable payloads (fast.h): six cases must not miss the floor by the draw.
    DecodeChainSpec spec = thresholdTieSpec();
    fast::judgeableOnFirstCase(spec.act);
    checkChain(spec, 1.0, kThresholdTieFloor, true);
}

} // namespace
} // namespace prop
} // namespace qsa

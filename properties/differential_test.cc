// Contract 7.1 (differential): both pipelines of the implementation equal the CPU reference
// (qsa::ref::runPrefill / runDecode) bit for bit: outIdx, the pool afterwards and the split counters, for
// half and bf16, on any input (NaN/Inf in padding, subnormal and huge payloads, extreme gammas and eps).
// Large cases are checked on sampled rows (chunk boundaries, sequence ends, random rows).
// Every property also reads the stage outputs back from the workspace through the section-6 layout alone
// (contract section 6, last paragraph; RunOptions::readStages) and compares them first, so that a failure
// names the first wrong stage: prefill K1a qNormed of every row and K1b kbar of every block (every row even
// in large cases: these are O(B*S)); decode B1 qNormed of every row and B2 logits g < ctx / 4 of every
// valid row. With nVis <= 512 decode selects every block, so B1/B2 numerics are visible only this way.
#include <algorithm>

#include "fixtures/explain.h"
#include "properties/cases.h"
#include "reference/rowops.h"

namespace qsa {
namespace prop {
namespace {

// The cases of the prefill differentials and their fast twins: tie-biased or not, with a pool in half of them
// (hostile: always, with holes, out-of-plane ids and truncated tables), the chunked regime at defaultShares(true).
PrefillSpec prefillSpec(bool hostile) {
    SpecOptions o;
    o.tieBias = *pick(false, true);
    o.pool = hostile || *pick(false, true);
    o.hostilePool = hostile;
    o.shares = defaultShares(true);
    return *genPrefillSpec(o);
}

// The prefill case of `spec`, its regions covered (nVis > 512 and chunked at the floors given), run with its stages
// read back and judged by judge(c, got); a failure captures the case as a fixture.
template <typename Judge>
void judgePrefillCase(PrefillSpec const& spec, double nVis, double chunked, Judge&& judge) {
    ref::PrefillCase const c = toCase(spec);
    coverPrefill(prefillRegions(c), nVis, chunked);
    Capture cap("differential", describe(spec), c);
    RunOptions ro;
    ro.readStages = true;
    judge(c, runImplPrefill(c, ro));
}

// Levels (contract section 8): valid page tables are core; holes read as +0.0, out-of-plane ids and slots
// >= maxPagesPerSeq are hardened, so the hostile-pool half of each differential is its own property.
void prefillMatchesReference(bool hostile) {
    PrefillSpec const spec = prefillSpec(hostile);
    judgePrefillCase(spec, nVisFloor(), kChunkedFloor, [&](ref::PrefillCase const& c, PrefillOut const& got) {
        if (fullReferenceAffordable(c)) {
            ref::PrefillResult const want = ref::runPrefill(c);
            QSA_REQUIRE_EMPTY(diffPrefillStages(c, got, PrefillStages{want.qNormed, want.kbar}));
            // Ties across ranks 512/513 on the last valid row of each sequence (logits of the reference).
            bool tie = false;
            int32_t const MB = (c.seqLen + 3) / 4;
            for (int32_t b = 0; b < c.batchSize && !tie; ++b) {
                int32_t const ctx = ref::caseCtx(c, b);
                if (ctx / 4 > 512)
                    tie = tiesAtRank(&want.logits[(size_t(b) * c.seqLen + ctx - 1) * MB], ctx / 4);
            }
            coverage::cover("tie_at_rank_512", tie);
            QSA_REQUIRE_EMPTY(diffOutIdx(got.outIdx, want.outIdx, c.seqLen, "prefill vs reference") +
                              fixtures::explainFirstDifference(c, want, got.outIdx));
            if (c.hasPool)
                QSA_REQUIRE_EMPTY(diffPool(got.pool, want.poolAfter, c.pool.dims, "prefill pool vs reference"));
            return;
        }
        QSA_REQUIRE_EMPTY(diffPrefillStages(c, got, referencePrefillStages(c)));
        QSA_REQUIRE_EMPTY(sampledRowsMismatch(c, got.outIdx, 24, spec.act.seed, "prefill vs reference: sampled row"));
    });
}

QSA_PROP(Differential, PrefillMatchesReference, 100) {
    prefillMatchesReference(false);
}

QSA_PROP(Differential, PrefillHostilePoolMatchesReference, 50) {
    prefillMatchesReference(true);
}

// The chain of the DecodeSteps* properties and their fast twins: each step runs with its stages read back;
// judge(d, got, "decode step <k>") checks it and returns the pool the next step starts from.
template <typename Judge>
void walkDecodeSteps(bool hostile, Judge&& judge) {
    DecodeChainSpec const spec = *genDecodeChainSpec(implOnGpu() ? 2100 : 300, 6, false, hostile);
    walkDecodeChain(spec, "differential", nVisFloor(), [&](ref::DecodeCase& d, size_t k) {
        RunOptions ro;
        ro.readStages = true;
        return judge(d, runImplDecode(d, ro), "decode step " + std::to_string(k));
    });
}

// Every decode step starts from the reference's own pool state, so each step is a pure differential.
void decodeStepsMatchReference(bool hostile) {
    walkDecodeSteps(hostile, [](ref::DecodeCase& d, DecodeOut const& got, std::string const& step) {
        ref::DecodeResult const want = ref::runDecode(d);
        std::string const stages = diffDecodeStages(d, got, want);
        QSA_REQUIRE_EMPTY(stages.empty() ? "" : step + ": " + stages);
        QSA_REQUIRE_EMPTY(diffOutIdx(got.outIdx, want.outIdx, 1, step.c_str()) +
                          fixtures::explainFirstDifference(d, want, got.outIdx));
        QSA_REQUIRE_EMPTY(diffPool(got.pool, want.poolAfter, d.pool.dims, step.c_str()));
        if (d.hasSplitCounters)
            RC_ASSERT(got.splitCounters == want.splitCountersAfter);
        return want.poolAfter;
    });
}

QSA_PROP(Differential, DecodeStepsMatchReference, 30) {
    decodeStepsMatchReference(false);
}

QSA_PROP(Differential, DecodeStepsHostilePoolMatchReference, 30) {
    decodeStepsMatchReference(true);
}

// nVis > 512, so that B3's radix select really selects (below that every block is taken), on tie-heavy
// logits: the threshold bin holds many equal keys (+0.0 runs, repeated kbar rows).
// nVis > 512 throughout (ctx >= 2052 at the first step) on logits that tie across ranks 512/513 (see
// PrefillDecode.TiesAtTheSelectionThreshold): the spec of DecodeSelectsAmongManyBlocks and its fast twin.
DecodeChainSpec manyBlocksTieSpec(int32_t hi) {
    DecodeChainSpec spec = *genDecodeChainSpec(40, 3, true, false);
    spec.B = std::min(spec.B, implOnGpu() ? 4 : 1);
    spec.L.resize(spec.B);
    for (int32_t& L : spec.L)
        L = *flatRange<int32_t>(2051, hi);
    spec.act.ties = *pick(Ties::kNegativeDots, Ties::kDupBlocks, Ties::kDeadGammaK, Ties::kDupBlocks);
    spec.act.distinctBlocks = *flatRange<int32_t>(1, 5);
    spec.act.rope = Rope::kIdentity;
    spec.act.extremeGamma = false;
    spec.regime = Regime::kManyBlocks;
    fitPool(spec.pool, int64_t(spec.B) * hi);
    return spec;
}

// Both profiles' many-blocks chain: ieee against the reference (ties among its logits, the next step from its pool),
// fast by judgeDecodeStep (ties among the implementation's own logits, the next step from its own pool).
void decodeSelectsAmongManyBlocks(bool fastProfile) {
    int32_t const hi = implOnGpu() ? 4200 : 2200;
    DecodeChainSpec spec = manyBlocksTieSpec(hi);
    // The first case draws judgeable payloads (fast.h): six cases must not miss the floor by the draw.
    if (fastProfile)
        fast::judgeableOnFirstCase(spec.act);
    bool tie = false;
    walkDecodeChain(spec, "differential", 1.0, [&](ref::DecodeCase& d, size_t k) {
        RunOptions ro;
        ro.readStages = true;
        DecodeOut const got = runImplDecode(d, ro);
        ref::DecodeResult const want = fastProfile ? ref::DecodeResult{} : ref::runDecode(d);
        std::vector<float> const& logits = fastProfile ? got.logits : want.logits;
        for (int32_t b = 0; b < d.batchSize; ++b)
            if (ref::decodeRowValid(d.contextLengths[b], d.maxBlocks))
                tie |= tiesAtRank(&logits[size_t(b) * d.maxBlocks], d.contextLengths[b] / 4);
        std::string const step = "decode (nVis > 512) step " + std::to_string(k) + ": ";
        if (fastProfile) {
            std::string const m = fast::judgeDecodeStep(d, got, false);
            QSA_REQUIRE_EMPTY(m.empty() ? "" : step + m);
            return got.pool;
        }
        std::string const stages = diffDecodeStages(d, got, want);
        QSA_REQUIRE_EMPTY(stages.empty() ? "" : step + stages);
        QSA_REQUIRE_EMPTY(diffOutIdx(got.outIdx, want.outIdx, 1, "decode (nVis > 512) vs reference") +
                          fixtures::explainFirstDifference(d, want, got.outIdx));
        return want.poolAfter;
    });
    coverage::cover("tie_at_rank_512", tie, kThresholdTieFloor);
}

QSA_PROP(Differential, DecodeSelectsAmongManyBlocks, 6) {
    decodeSelectsAmongManyBlocks(false);
}

// ---- profile `fast` (contract section 9): the same cases, judged by E1-E5 instead of bit equality ----------

void prefillWithinFastEnclosure(bool hostile) {
    PrefillSpec const spec = prefillSpec(hostile);
    // Half the twin's floors on the CPU, where it runs fewer cases (a floor must not fail by chance).
    double const floorScale = implOnGpu() ? 1.0 : 0.5;
    judgePrefillCase(spec, nVisFloor() * floorScale, kChunkedFloor * floorScale,
                     [&](ref::PrefillCase const& c, PrefillOut const& got) {
                         QSA_REQUIRE_EMPTY(fast::judgePrefillStages(c, got));
                         QSA_REQUIRE_EMPTY(fast::judgePrefillRows(c, got, fast::rowsToJudge(c, 24, spec.act.seed)));
                         if (c.hasPool)
                             QSA_REQUIRE_EMPTY(fast::judgePrefillPool(c, got));
                     });
}

// CPU: fewer cases than the bit-exact twin (the interval judge costs about what the oracle does).
QSA_PROP(Differential, PrefillWithinFastEnclosure, implOnGpu() ? 100 : 60) {
    prefillWithinFastEnclosure(false);
}

QSA_PROP(Differential, PrefillHostilePoolWithinFastEnclosure, implOnGpu() ? 50 : 30) {
    prefillWithinFastEnclosure(true);
}

// Each step starts from the implementation's own pool: every step is judged from the inputs it was given.
void decodeStepsWithinFastEnclosure(bool hostile) {
    walkDecodeSteps(hostile, [hostile](ref::DecodeCase& d, DecodeOut const& got, std::string const& step) {
        std::string const m = fast::judgeDecodeStep(d, got, hostile);
        QSA_REQUIRE_EMPTY(m.empty() ? "" : step + ": " + m);
        return got.pool;
    });
}

QSA_PROP(Differential, DecodeStepsWithinFastEnclosure, implOnGpu() ? 30 : 15) {
    decodeStepsWithinFastEnclosure(false);
}

QSA_PROP(Differential, DecodeStepsHostilePoolWithinFastEnclosure, implOnGpu() ? 30 : 15) {
    decodeStepsWithinFastEnclosure(true);
}

// nVis > 512 on tie-heavy logits: E4 judges B3's set exactly on the implementation's own logits.
QSA_PROP(Differential, DecodeSelectsAmongManyBlocksFast, 6) {
    decodeSelectsAmongManyBlocks(true);
}

// The chunked twins' case: B * S * MB > 8388608, so Rc < B * S and every batch is cut into chunks. No
// shrinking: every case is large, and what is shrinkable here does not make it smaller. judgeable (the `fast`
// twin): the chunk boundaries are its region, so payloads whose intervals are infinite (huge, inf, NaN in valid
// rows: PrefillWithinFastEnclosure's region) would leave a one-case CPU run nothing to judge (the floor).
PrefillSpec chunkedSpec(bool judgeable) {
    SpecOptions o;
    o.tieBias = *rc::gen::noShrink(rc::gen::arbitrary<bool>());
    PrefillSpec spec = *rc::gen::noShrink(genPrefillSpec(o));
    if (judgeable)
        fast::makeJudgeable(spec.act);
    spec.S = implOnGpu() ? *rc::gen::noShrink(pick<int32_t>(2049, 4096, 8192, 6001)) : 2049;
    int32_t const MB = (spec.S + 3) / 4;
    int32_t const minB = int32_t(8388608 / (int64_t(spec.S) * MB)) + 1;
    spec.B = std::min(minB + (implOnGpu() ? *rc::gen::noShrink(flatRange<int32_t>(0, 3)) : 0),
                      std::max(minB, 32768 / spec.S));
    spec.ctx.clear();
    for (int32_t b = 0; b < spec.B; ++b)
        spec.ctx.push_back(b % 3 == 1 ? spec.S - 1 - 4 * b : spec.S);
    spec.hasPool = false;
    spec.regime = Regime::kChunked;
    return spec;
}

// Always chunked (B * S * MB > 8388608, so Rc < B * S): sampled rows around every chunk boundary equal the
// reference, and a sequence's rows equal its rows when it runs alone (where the boundaries fall elsewhere).
QSA_PROP(Differential, ChunkedPrefillMatchesReference, implOnGpu() ? 10 : 1) {
    PrefillSpec const spec = chunkedSpec(false);
    judgePrefillCase(spec, 0.0, 1.0, [&](ref::PrefillCase const& c, PrefillOut const& got) {
        QSA_REQUIRE_EMPTY(diffPrefillStages(c, got, referencePrefillStages(c)));
        QSA_REQUIRE_EMPTY(sampledRowsMismatch(c, got.outIdx, 16, spec.act.seed, "chunked prefill vs reference: row"));
        int32_t const b = spec.B - 1;
        PrefillOut const one = runImplPrefill(subBatch(c, {b}, spec.S, spec.act));
        QSA_REQUIRE_EMPTY(diffSequence(got, spec.S, b, one, spec.S, 0, spec.S, "in the chunked batch vs alone"));
    });
}

// Always chunked, judged under `fast`: stages on every row, E3 on rows around every chunk boundary.
QSA_PROP(Differential, ChunkedPrefillWithinFastEnclosure, implOnGpu() ? 10 : 1) {
    PrefillSpec const spec = chunkedSpec(true);
    judgePrefillCase(spec, 0.0, 1.0, [&](ref::PrefillCase const& c, PrefillOut const& got) {
        QSA_REQUIRE_EMPTY(fast::judgePrefillStages(c, got));
        QSA_REQUIRE_EMPTY(fast::judgePrefillRows(c, got, fast::rowsToJudge(c, 16, spec.act.seed)));
    });
}

} // namespace
} // namespace prop
} // namespace qsa

// Contract 7.1 (differential): both pipelines of the implementation equal the CPU reference
// (qsa::ref::runPrefill / runDecode) bit for bit: outIdx, the pool afterwards and the split counters, for
// half and bf16, on any input (NaN/Inf in padding, subnormal and huge payloads, extreme gammas and eps).
// Large cases are checked on sampled rows (chunk boundaries, sequence ends, random rows).
#include <algorithm>

#include "fixtures/explain.h"
#include "properties/cases.h"
#include "properties/prop.h"

namespace qsa {
namespace prop {
namespace {

QSA_PROP(Differential, PrefillMatchesReference, 150) {
    SpecOptions o;
    o.tieBias = *rc::gen::arbitrary<bool>();
    o.pool = *rc::gen::arbitrary<bool>();
    o.hostilePool = o.pool && *rc::gen::arbitrary<bool>();
    PrefillSpec const spec = *genPrefillSpec(o);
    ref::PrefillCase const c = toCase(spec);
    Capture cap("differential", describe(spec));
    cap.add(c);
    PrefillOut const got = runImplPrefill(c);
    if (fullReferenceAffordable(c)) {
        ref::PrefillResult const want = ref::runPrefill(c);
        QSA_REQUIRE_EMPTY(diffOutIdx(got.outIdx, want.outIdx, c.seqLen, "prefill vs reference") +
                          fixtures::explainFirstDifference(c, want, got.outIdx));
        if (c.hasPool)
            QSA_REQUIRE_EMPTY(diffPool(got.pool, want.poolAfter, c.pool.dims, "prefill pool vs reference"));
        return;
    }
    std::vector<int64_t> const rows = sampleRows(c, 24, spec.act.seed);
    std::vector<int32_t> const want = ref::runPrefillRows(c, rows);
    std::vector<int32_t> sampled;
    for (int64_t r : rows) {
        sampled.insert(sampled.end(), got.outIdx.begin() + r * ref::kIndexWidth,
                       got.outIdx.begin() + (r + 1) * ref::kIndexWidth);
    }
    for (size_t i = 0; i < rows.size(); ++i) {
        if (!std::equal(want.begin() + i * ref::kIndexWidth, want.begin() + (i + 1) * ref::kIndexWidth,
                        sampled.begin() + i * ref::kIndexWidth)) {
            RC_FAIL("prefill vs reference: sampled row b=" + std::to_string(rows[i] / c.seqLen) +
                    " t=" + std::to_string(rows[i] % c.seqLen) +
                    " differs (Rc=" + std::to_string(ref::prefillChunkRows(c.batchSize, c.seqLen)) + ")");
        }
    }
}

// Every decode step starts from the reference's own pool state, so each step is a pure differential.
QSA_PROP(Differential, DecodeStepsMatchReference, 60) {
    bool const hostile = *rc::gen::arbitrary<bool>();
    DecodeChainSpec const spec = *genDecodeChainSpec(implOnGpu() ? 2100 : 300, 6, false, hostile);
    Chain ch = makeChain(spec);
    Capture cap("differential", describe(spec));
    std::vector<uint16_t> pool = ref::runPrefill(ch.prefillL).poolAfter;
    for (size_t k = 0; k < ch.steps.size(); ++k) {
        ref::DecodeCase& d = ch.steps[k];
        d.pool.data = pool;
        cap.add(d);
        DecodeOut const got = runImplDecode(d);
        ref::DecodeResult const want = ref::runDecode(d);
        std::string const step = "decode step " + std::to_string(k);
        QSA_REQUIRE_EMPTY(diffOutIdx(got.outIdx, want.outIdx, 1, step.c_str()) +
                          fixtures::explainFirstDifference(d, want, got.outIdx));
        QSA_REQUIRE_EMPTY(diffPool(got.pool, want.poolAfter, d.pool.dims, step.c_str()));
        if (d.hasSplitCounters)
            RC_ASSERT(got.splitCounters == want.splitCountersAfter);
        pool = want.poolAfter;
    }
}

// nVis > 512, so that B3's radix select really selects (below that every block is taken), on tie-heavy
// logits: the threshold bin holds many equal keys (+0.0 runs, repeated kbar rows).
QSA_PROP(Differential, DecodeSelectsAmongManyBlocks, 6) {
    DecodeChainSpec spec = *genDecodeChainSpec(40, 3, true, false);
    int32_t const hi = implOnGpu() ? 4200 : 2200;
    spec.B = std::min(spec.B, implOnGpu() ? 4 : 1);
    spec.L.resize(spec.B);
    for (int32_t& L : spec.L)
        L = *rc::gen::inRange<int32_t>(2049, hi);
    if (spec.act.ties == Ties::kNone)
        spec.act.ties = Ties::kNegativeDots;
    spec.act.rope = Rope::kIdentity;
    spec.act.extremeGamma = false;
    fitPool(spec.pool, int64_t(spec.B) * hi);
    Chain ch = makeChain(spec);
    Capture cap("differential", describe(spec));
    std::vector<uint16_t> pool = ref::runPrefill(ch.prefillL).poolAfter;
    for (size_t k = 0; k < ch.steps.size(); ++k) {
        ref::DecodeCase& d = ch.steps[k];
        d.pool.data = pool;
        cap.add(d);
        ref::DecodeResult const want = ref::runDecode(d);
        std::vector<int32_t> const got = runImplDecode(d).outIdx;
        QSA_REQUIRE_EMPTY(diffOutIdx(got, want.outIdx, 1, "decode (nVis > 512) vs reference") +
                          fixtures::explainFirstDifference(d, want, got));
        pool = want.poolAfter;
    }
}

// Always chunked (B * S * MB > 8388608, so Rc < B * S): sampled rows around every chunk boundary equal the
// reference, and a sequence's rows equal its rows when it runs alone (where the boundaries fall elsewhere).
QSA_PROP(Differential, ChunkedPrefillMatchesReference, implOnGpu() ? 10 : 1) {
    // No shrinking: every case is large, and what is shrinkable here does not make it smaller.
    SpecOptions o;
    o.tieBias = *rc::gen::noShrink(rc::gen::arbitrary<bool>());
    PrefillSpec spec = *rc::gen::noShrink(genPrefillSpec(o));
    spec.S = implOnGpu() ? *rc::gen::noShrink(pick<int32_t>(2049, 4096, 8192, 6001)) : 2049;
    int32_t const MB = (spec.S + 3) / 4;
    int32_t const minB = int32_t(8388608 / (int64_t(spec.S) * MB)) + 1;
    spec.B = std::min(minB + (implOnGpu() ? *rc::gen::noShrink(rc::gen::inRange<int32_t>(0, 3)) : 0),
                      std::max(minB, 32768 / spec.S));
    spec.ctx.clear();
    for (int32_t b = 0; b < spec.B; ++b)
        spec.ctx.push_back(b % 3 == 1 ? spec.S - 1 - 4 * b : spec.S);
    spec.hasPool = false;
    ref::PrefillCase const c = toCase(spec);
    Capture cap("differential", describe(spec));
    cap.add(c);
    PrefillOut const got = runImplPrefill(c);
    std::vector<int64_t> const rows = sampleRows(c, 16, spec.act.seed);
    std::vector<int32_t> const want = ref::runPrefillRows(c, rows);
    size_t const W = ref::kIndexWidth;
    for (size_t i = 0; i < rows.size(); ++i) {
        if (!std::equal(want.begin() + i * W, want.begin() + (i + 1) * W, got.outIdx.begin() + rows[i] * W)) {
            RC_FAIL("chunked prefill vs reference: row b=" + std::to_string(rows[i] / c.seqLen) +
                    " t=" + std::to_string(rows[i] % c.seqLen) +
                    " differs (Rc=" + std::to_string(ref::prefillChunkRows(c.batchSize, c.seqLen)) + ")");
        }
    }
    int32_t const b = spec.B - 1;
    ref::PrefillCase const alone = subBatch(c, {b}, spec.S, spec.act);
    PrefillOut const one = runImplPrefill(alone);
    auto const first = got.outIdx.begin() + size_t(b) * spec.S * W;
    auto const m = std::mismatch(one.outIdx.begin(), one.outIdx.end(), first);
    if (m.first != one.outIdx.end()) {
        size_t const e = size_t(m.first - one.outIdx.begin());
        RC_FAIL("sequence " + std::to_string(b) + " row t=" + std::to_string(e / W) +
                " differs in the chunked batch "
                "from its run alone");
    }
}

} // namespace
} // namespace prop
} // namespace qsa

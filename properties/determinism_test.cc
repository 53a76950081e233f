// Contract 7.4 (determinism): repeated runs are bitwise equal whatever the workspace held before
// (random garbage, NaN in every word, zeros) and on whichever stream, also with two runs in flight on two
// streams at once.
#include "properties/cases.h"

namespace qsa {
namespace prop {
namespace {

// The stage slots are read back too: they are results (contract section 6), and a stage that varies
// between runs within profile fast's freedoms passes every differential and shows only here. Run 1 (stream 1)
// gets its inputs only behind other work on its stream and its outIdx copied out on it: work enqueued on
// another stream than the caller's reads NaN inputs or misses the copy (on a GPU; region
// inputs_behind_stream_work counts the cases where that ran).
RunOptions fillOption(int i, uint64_t seed) {
    RunOptions o;
    o.readStages = true;
    o.behindStreamWork = i == 1;
    o.workspaceFill = i % 3 == 0 ? Fill::kGarbage : (i % 3 == 1 ? Fill::kNaN : Fill::kZero);
    o.fillSeed = seed + i;
    o.stream = i % 3;
    return o;
}

// ", stream n[, inputs behind other work on the stream]": what fillOption(i) sets besides the fill.
std::string runDetail(int i) {
    return ", stream " + std::to_string(i % 3) + (i == 1 ? ", inputs behind other work on the stream" : "");
}

QSA_PROP(Determinism, PrefillRepeatsBitwise, 60) {
    SpecOptions o;
    o.pool = *pick(false, true);
    o.tieBias = true;
    PrefillSpec const spec = *genPrefillSpec(o);
    ref::PrefillCase const c = toCase(spec);
    coverPrefill(prefillRegions(c), nVisFloor(), 0.0);
    coverage::cover("inputs_behind_stream_work", implOnGpu());
    Capture cap("determinism", describe(spec), c);
    PrefillOut const first = runImplPrefill(c, fillOption(0, spec.act.seed));
    for (int i = 1; i < 3; ++i) {
        PrefillOut const again = runImplPrefill(c, fillOption(i, spec.act.seed));
        std::string const run =
            "run " + std::to_string(i) + " (workspace fill " + std::to_string(i % 3) + runDetail(i) + ")";
        std::string const what = run + " vs run 0", against = "run 0 in " + run;
        QSA_REQUIRE_EMPTY(diffOutIdx(again.outIdx, first.outIdx, c.seqLen, what.c_str()));
        QSA_REQUIRE_EMPTY(diffPrefillStages(c, again, PrefillStages{first.qNormed, first.kbar}, against.c_str()));
        if (c.hasPool)
            QSA_REQUIRE_EMPTY(diffPool(again.pool, first.pool, c.pool.dims, what.c_str()));
    }
}

QSA_PROP(Determinism, TwoStreamsInFlight, 40) {
    SpecOptions o;
    o.tieBias = true;
    PrefillSpec const sa = *genPrefillSpec(o);
    PrefillSpec const sb = *genPrefillSpec(o);
    ref::PrefillCase const a = toCase(sa), b = toCase(sb);
    coverPrefill(prefillRegions(a), nVisFloor(), 0.0);
    Capture cap("determinism", describe(sa), a);
    RunOptions garbage, nan;
    garbage.readStages = nan.readStages = true;
    nan.workspaceFill = Fill::kNaN;
    // outIdx and the stage slots: a stage enqueued on another stream than the caller's shows in either.
    auto same = [](PrefillCase const& c, PrefillOut const& got, PrefillOut const& want, char const* what,
                   char const* against) {
        std::string const m = diffOutIdx(got.outIdx, want.outIdx, c.seqLen, what);
        return m.empty() ? diffPrefillStages(c, got, PrefillStages{want.qNormed, want.kbar}, against) : m;
    };
    auto const twice = runImplPrefillPair(a, a, garbage, nan);
    QSA_REQUIRE_EMPTY(same(a, twice.second, twice.first, "stream 2 vs stream 1, same case",
                           "stream 1's run in stream 2's run of the same case"));
    auto const mixed = runImplPrefillPair(a, b, nan, garbage);
    QSA_REQUIRE_EMPTY(same(a, mixed.first, twice.first, "case A next to case B vs alone",
                           "case A's run alone in its run next to case B"));
    QSA_REQUIRE_EMPTY(same(b, mixed.second, runImplPrefill(b, garbage), "case B next to A vs alone",
                           "case B's run alone in its run next to case A"));
}

QSA_PROP(Determinism, DecodeRepeatsBitwise, 40) {
    DecodeChainSpec const spec = *genDecodeChainSpec(implOnGpu() ? 2100 : 300, 2, true, false);
    coverage::cover("inputs_behind_stream_work", implOnGpu());
    walkDecodeChain(spec, "determinism", nVisFloor(), [&](ref::DecodeCase& d, size_t) {
        DecodeOut const first = runImplDecode(d, fillOption(0, spec.act.seed));
        for (int i = 1; i < 3; ++i) {
            DecodeOut const again = runImplDecode(d, fillOption(i, spec.act.seed));
            std::string const run = "decode run " + std::to_string(i) + " (" + runDetail(i).substr(2) + ")";
            std::string const what = run + " vs run 0";
            QSA_REQUIRE_EMPTY(diffOutIdx(again.outIdx, first.outIdx, 1, what.c_str()));
            QSA_REQUIRE_EMPTY(diffPool(again.pool, first.pool, d.pool.dims, (what + ", pool").c_str()));
            RC_ASSERT(again.splitCounters == first.splitCounters);
            ref::DecodeResult run0; // B1's qNormed and B2's valid logit prefix of run 0
            run0.qNormed = first.qNormed;
            run0.logits = first.logits;
            QSA_REQUIRE_EMPTY(diffDecodeStages(d, again, run0, ("run 0 in " + run).c_str()));
        }
        return first.pool;
    });
}

} // namespace
} // namespace prop
} // namespace qsa

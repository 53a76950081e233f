// Contract 7.3 (padding): padded rows (t >= ctx[b], ctx[b] == 0) are all -1, and padded inputs are never
// read: poisoning them with NaN / Inf / garbage changes nothing (outIdx and pool). Context lengths outside
// [0, S] act clamped. Invalid decode rows (ctx < 1 or ctx / 4 > maxBlocks, floor: contract section 5) are
// all -1, write no pool cell and change nothing for the other rows. The valid side of that boundary
// (ctx / 4 == maxBlocks < ceilDiv(ctx, 4)) is drawn by the decode chains (extraBlocks = -1) of every
// decode property.
#include <algorithm>

#include "properties/cases.h"

namespace qsa {
namespace prop {
namespace {

QSA_PROP(Padding, PaddedRowsAllMinusOneAndPoisonIgnored, 80) {
    SpecOptions o;
    o.allowPoison = false;
    o.pool = *pick(false, true);
    PrefillSpec spec = *genPrefillSpec(o);
    ref::PrefillCase const clean = toCase(spec);
    spec.act.poisonPadding = true;
    ref::PrefillCase const poisoned = toCase(spec);
    PrefillRegions const r = prefillRegions(poisoned);
    coverPrefill(r, nVisFloor(), 0.0);
    // Drawn (coverage.h): 80% of the cases on the CPU (tools/coverage_margin.py, 2026-12-05).
    coverage::coverDrawn("padded_rows",
                         std::any_of(spec.ctx.begin(), spec.ctx.end(), [&](int32_t x) { return x < spec.S; }), 0.5);
    Capture cap("padding", describe(spec), poisoned);
    PrefillOut const a = runImplPrefill(poisoned);
    for (int32_t b = 0; b < spec.B; ++b) {
        for (int32_t t = spec.ctx[b]; t < spec.S; ++t) {
            int32_t const* row = &a.outIdx[(size_t(b) * spec.S + t) * ref::kIndexWidth];
            if (!std::all_of(row, row + ref::kIndexWidth, [](int32_t v) { return v == -1; })) {
                RC_FAIL("padded row b=" + std::to_string(b) + " t=" + std::to_string(t) + " (ctx " +
                        std::to_string(spec.ctx[b]) + ") is not all -1: " + rowLayoutViolation(row, t, false, false));
            }
        }
    }
    PrefillOut const c = runImplPrefill(clean);
    QSA_REQUIRE_EMPTY(diffOutIdx(a.outIdx, c.outIdx, spec.S, "poisoned padding vs clean padding"));
    if (spec.hasPool)
        QSA_REQUIRE_EMPTY(diffPool(a.pool, c.pool, clean.pool.dims, "pool, poisoned vs clean padding"));
}

QSA_PROP(Padding, ContextLengthsOutsideRangeActClamped, 40) {
    SpecOptions o;
    o.pool = *pick(false, true);
    PrefillSpec spec = *genPrefillSpec(o);
    // At least one sequence at an end of [0, S], so that every case has a length to move outside.
    // (Sequence 0 of the nVis > 512 regime keeps its length: S.)
    int32_t const end = *flatRange<int32_t>(0, spec.B);
    spec.ctx[size_t(end)] = end == 0 && spec.regime == Regime::kManyBlocks ? spec.S : *pick(spec.S, 0);
    ref::PrefillCase const c = toCase(spec);
    coverPrefill(prefillRegions(c), nVisFloor(), 0.0);
    ref::PrefillCase wild = c;
    bool outside = false;
    for (int32_t& ctx : wild.contextLengths) {
        if (ctx == 0)
            ctx = -*pick<int32_t>(1, 4, 1 << 30);
        else if (ctx == c.seqLen)
            ctx = c.seqLen + *pick<int32_t>(1, 4, 129, 1 << 30);
        outside |= ctx < 0 || ctx > c.seqLen;
    }
    coverage::cover("clamped_outside_range", outside, 1.0);
    coverage::coverDrawn("clamped_with_pool", outside && spec.hasPool, 0.3);
    Capture cap("padding", describe(spec), wild);
    // Clamping is the whole run's: outIdx alone cannot see an unclamped ctx > S (row t's selection depends on
    // t only), but K1b's last block, the stage slots and the pool cells written past token S can.
    RunOptions ro;
    ro.readStages = true;
    PrefillOut const w = runImplPrefill(wild, ro), k = runImplPrefill(c, ro);
    QSA_REQUIRE_EMPTY(diffOutIdx(w.outIdx, k.outIdx, c.seqLen, "wild ctx vs clamped ctx"));
    QSA_REQUIRE_EMPTY(diffPrefillStages(c, w, PrefillStages{k.qNormed, k.kbar}, "the run with ctx clamped"));
    if (spec.hasPool)
        QSA_REQUIRE_EMPTY(diffPool(w.pool, k.pool, c.pool.dims, "pool, wild ctx vs clamped ctx"));
}

QSA_PROP(Padding, InvalidDecodeRowsAreInert, 40) {
    DecodeChainSpec spec = *genDecodeChainSpec(implOnGpu() ? 700 : 200, 3, false, false);
    spec.B = std::max(spec.B, 2);
    spec.L.resize(spec.B, 5);
    Chain ch = makeChain(spec);
    coverDecode(decodeRegions(ch.steps), nVisFloor());
    std::vector<uint16_t> const pool = refPoolAfterPrefill(ch.prefillL);
    ref::DecodeCase d = ch.steps.back();
    d.pool.data = pool;
    int32_t const bad = *flatRange<int32_t>(0, spec.B);
    ref::DecodeCase inv = d;
    // ctx < 1 in half the cases, by size (sizeShare: the floors below cannot flake); else ctx / 4 ==
    // maxBlocks + 1 (the first invalid lengths above the floor boundary, with and without a tail) or far
    // above it.
    bool const below1 = *sizeShare(50, 0);
    inv.contextLengths[bad] =
        below1 ? *pick<int32_t>(0, -1, -1000)
               : *pick<int32_t>(4 * d.maxBlocks + 4, 4 * d.maxBlocks + 5, 4 * d.maxBlocks + 7, 4 * d.maxBlocks + 1000);
    coverage::cover("invalid_ctx_below_1", inv.contextLengths[bad] < 1, 0.3);
    coverage::cover("invalid_ctx_beyond_max_blocks", inv.contextLengths[bad] / 4 > d.maxBlocks, 0.3);
    // Half the cases also give the invalid row the padding poison (poisonRow: mostly NaN and Inf): its outputs are
    // fixed whatever it holds (section 5), and no other row may see it (section 7.5). By size, on slots that
    // meet each invalid kind in a quarter of the cases.
    bool const poisoned = *sizeShare(50, 5);
    if (poisoned)
        poisonRow(inv.dtype, spec.act.seed ^ 0x1D, &inv.indexQk[size_t(bad) * 640]);
    coverage::cover("invalid_row_poisoned", poisoned, 0.3);
    RC_LOG() << "invalid row b=" << bad << " ctx=" << inv.contextLengths[bad] << " maxBlocks=" << d.maxBlocks
             << (poisoned ? " input=poisoned" : "") << "\n";
    Capture cap("padding", describe(spec), inv); // after inv: it must outlive the capture
    DecodeOut const got = runImplDecode(inv);
    DecodeOut const base = runImplDecode(d);
    for (int32_t b = 0; b < d.batchSize; ++b) {
        int32_t const* g = &got.outIdx[size_t(b) * ref::kIndexWidth];
        int32_t const* w = &base.outIdx[size_t(b) * ref::kIndexWidth];
        if (b == bad) {
            RC_ASSERT(std::all_of(g, g + ref::kIndexWidth, [](int32_t v) { return v == -1; }));
        } else if (!std::equal(g, g + ref::kIndexWidth, w)) {
            RC_FAIL("valid decode row b=" + std::to_string(b) + " changed because row " + std::to_string(bad) +
                    " is invalid");
        }
    }
    // No cell of the invalid row: its pages hold what they held before; every other cell as in the valid run.
    std::vector<uint16_t> want = base.pool;
    ref::PoolDims const& dims = d.pool.dims;
    size_t const pageElems = size_t(128) * dims.numKVHeads * dims.poolHeadDim;
    for (int plane = 0; plane < 2; ++plane) {
        for (int32_t s = 0; s < dims.maxPagesPerSeq; ++s) {
            int32_t const page = usablePage(d.pool, bad, plane, s * 128);
            if (page >= 0)
                std::copy_n(pool.begin() + page * pageElems, pageElems, want.begin() + page * pageElems);
        }
    }
    QSA_REQUIRE_EMPTY(diffPool(got.pool, want, dims, "pool after a step with an invalid row"));
}

} // namespace
} // namespace prop
} // namespace qsa

// Decode stages as properties (issue 13.4), for ANY implementation of the public API: after a decode run
// the workspace holds B1's q output (slot qNormed) and B2's logits (slot logits, valid prefix g < ctx/4 of
// every valid row; contract section 6). Both equal the reference bit for bit (profile ieee) on random pools:
// canaries in every cell nothing may read, K-tails and V-tails of mixed magnitudes (normal, subnormal, tiny,
// huge, inf, NaN), context lengths around multiples of 4 (completing steps read three K-tails) and page
// edges. Levels (contract section 8): the core variants use valid page tables and valid rows only; the
// hardened ones (*HostilePool*) add -1 holes, out-of-plane ids and truncated tables (their cells read +0.0)
// and invalid rows (zero qNormed), which are hardened guarantees.
#include <algorithm>

#include "properties/cases.h"

namespace qsa {
namespace prop {
namespace {

struct StageCase {
    ref::DecodeCase d;
    std::string description;
    bool qCancel = false; // the q rows are kCancel payloads
};

// Writes 128 T values of a randomly chosen magnitude class into the indexer tail at element e (none when e < 0).
void fillTail(ref::HostPool& pool, int64_t e, ActSpec a, uint64_t seed) {
    if (e < 0)
        return;
    static constexpr Payload kinds[6] = {Payload::kNormal, Payload::kSubnormal, Payload::kHuge,
                                         Payload::kMixed,  Payload::kTiny,      Payload::kBits};
    a.payload = kinds[seed % 6];
    a.ties = Ties::kNone;
    uint16_t row640[640];
    fillTokenRow(a, seed, int32_t(seed >> 8) & 0xFFFF, row640);
    std::copy(row640 + 512, row640 + 640, pool.data.begin() + e);
}

rc::Gen<StageCase> genStageCase(bool hardened) {
    return rc::gen::exec([hardened] {
        bool const gpu = implOnGpu();
        int32_t B = *flatRange<int32_t>(1, gpu ? 9 : 5);
        // Hardened: an invalid row next to valid ones in 40% of the cases, by size (coverage floor 30%).
        bool const invalidSlot = hardened && *sizeShare(40, 2);
        if (invalidSlot)
            B = std::max(B, 2);
        ActSpec act = *genActSpec(*pick(false, true), false);
        // 35% more of the q rows cancel (kCancel): B1's sum-of-squares order shows in its T outputs only
        // when the fma chain rounds differently, and an amplified rounding is what kCancel makes visible.
        // By size (sizeShare), not by a draw: a third drawn at random fell below the 25% floor of q_cancel
        // in 8 of 40 cases once in CI (P(Bin(40, 3/7) <= 9) = 0.6% per run of a hostile-pool property).
        bool const cancelSlot = *sizeShare(35, 10);
        if (act.payload != Payload::kCancel && cancelSlot)
            makeCancel(act);
        // Around multiples of 4 (completing steps) and of 128 (page edges); nVis > 512 in a share of cases.
        // The regime (fixed shares, regimeGen): small lengths, page edges, or nVis > 512.
        Regime const regime = *regimeGen(defaultShares(false));
        std::vector<int32_t> bases = {4, 8, 12, 16, 20, 32, 64};
        if (regime == Regime::kPageEdge)
            bases = {124, 128, 132, 252, 256, 260, 384};
        if (regime == Regime::kManyBlocks)
            bases = {2056, 2060, 2176, gpu ? 4096 : 2180};
        std::vector<int32_t> ctx;
        for (int32_t b = 0; b < B; ++b)
            ctx.push_back(std::max(1, *pickOf(bases) + *pick<int32_t>(0, -1, 1, 0, -2, 3)));
        int32_t const maxCtx = *std::max_element(ctx.begin(), ctx.end());
        ref::DecodeCase d;
        d.dtype = act.dtype;
        d.batchSize = B;
        // extra -1: maxBlocks = maxCtx / 4, the floor edge of contract section 5 (ctx / 4 == maxBlocks <
        // ceilDiv(ctx, 4) is a valid row).
        int32_t const extra = *flatRange<int32_t>(-1, 3);
        d.maxBlocks = extra < 0 ? std::max(1, maxCtx / 4) : (maxCtx + 3) / 4 + extra;
        // Invalid rows (contract section 5: ctx < 1 or ctx / 4 > maxBlocks; hardened) next to valid ones.
        int32_t invalidRow = -1;
        if (invalidSlot) {
            invalidRow = *flatRange<int32_t>(0, B);
            ctx[size_t(invalidRow)] = *pick<int32_t>(0, -1, 4 * d.maxBlocks + 4, 4 * d.maxBlocks + 7);
        }
        d.contextLengths = ctx;
        PoolSpec ps = *genPoolSpec(hardened, 0);
        if (hardened && ps.holesPer16 == 0 && !ps.outOfPlane && !ps.truncated)
            ps.holesPer16 = 3; // every hardened case has an unusable entry
        fitPool(ps, int64_t(B) * maxCtx * 4);
        d.pool = makePool(ps, act.dtype, B, maxCtx);
        // Live cells a decode step reads: V-tails of complete blocks g < ctx/4 and the K-tails of the trailing
        // tokens; written through usable entries only, so an unusable entry's page keeps its canaries.
        for (int32_t b = 0; b < B; ++b) {
            int32_t const c = ctx[b];
            for (int32_t g = 0; 4 * g + 3 < c; ++g)
                fillTail(d.pool, usableTail(d.pool, b, 1, 4 * g), act,
                         act.seed ^ (uint64_t(b) << 40) ^ uint64_t(g) << 1);
            for (int32_t t = std::max(0, c - 1 - (c - 1) % 4); t < c - 1; ++t)
                fillTail(d.pool, usableTail(d.pool, b, 0, t), act,
                         act.seed ^ (uint64_t(b) << 40) ^ (uint64_t(t) << 1) ^ 1);
        }
        d.indexQk.resize(size_t(B) * 640);
        for (int32_t b = 0; b < B; ++b)
            fillTokenRow(act, sequenceSeed(act, b), std::max(ctx[b] - 1, 0), &d.indexQk[size_t(b) * 640]);
        // Half the invalid rows hold the padding poison (poisonRow: mostly NaN and Inf): zero qNormed whatever the
        // input (a zero made from the input, such as x - x, is +0.0 only for finite x: oracle plant 18).
        if (invalidRow >= 0 && *rc::gen::arbitrary<bool>())
            poisonRow(act.dtype, act.seed ^ 0x1D, &d.indexQk[size_t(invalidRow) * 640]);
        setActInputs(d, act, std::max(maxCtx, 4 * d.maxBlocks + 8));
        d.hasSplitCounters = *pick(true, false);
        if (d.hasSplitCounters)
            d.splitCounters.assign(size_t(B) * ps.numKVHeads, 7);
        StageCase s;
        s.qCancel = act.payload == Payload::kCancel;
        std::ostringstream os;
        os << "decode-stage B=" << B << " maxBlocks=" << d.maxBlocks << " ctx=[";
        for (int32_t b = 0; b < B; ++b)
            os << (b ? "," : "") << ctx[b];
        os << "] " << act << " " << ps;
        s.description = os.str();
        s.d = std::move(d);
        return s;
    });
}

void coverStage(ref::DecodeCase const& d, bool hardened) {
    DecodeRegions const r = decodeRegions({d});
    coverDecode(r, nVisFloor());
    // Drawn regions (coverage.h), at rates about half of those measured on the CPU (tools/coverage_margin.py,
    // 2026-12-05: holes 59%, out-of-plane ids 20%, completing steps 58% of the hostile cases).
    coverage::coverDrawn("hole_used", r.holeUsed, hardened ? 0.30 : 0.0);
    coverage::coverDrawn("out_of_plane_used", r.outOfPlaneUsed, hardened ? 0.10 : 0.0);
    coverage::cover("truncated_hit", r.truncatedHit);
    coverage::coverDrawn("block_completes", r.blockCompletes, 0.30);
    coverage::cover("invalid_row", r.invalidRow, hardened ? 0.30 : 0.0);
    coverage::cover("valid_at_floor_edge", r.validAtFloorEdge);
}

// One stage case, generated, covered and captured, run by the implementation over a workspace filled with
// a drawn fill (shrinking towards the first of `fills`; seeded by ctx[0] + `fillSeedOffset`) with the
// section-6 slots qNormed and logits read back; fails with what judge(d, got) reports.
template <typename Judge>
void judgeStageCase(bool hardened, rc::Gen<Fill> const& fills, uint64_t fillSeedOffset, Judge judge) {
    StageCase const s = *genStageCase(hardened);
    coverStage(s.d, hardened);
    coverage::cover("q_cancel", s.qCancel, 0.25);
    Capture cap("decode_stages", s.description, s.d);
    RunOptions ro;
    ro.workspaceFill = *fills;
    ro.fillSeed = uint64_t(s.d.contextLengths[0]) + fillSeedOffset;
    ro.readStages = true;
    DecodeOut const got = runImplDecode(s.d, ro);
    QSA_REQUIRE_EMPTY(judge(s.d, got));
}

// Profile ieee, B2: slot logits against the reference's (diffDecodeLogits).
std::string logitsMismatch(ref::DecodeCase const& d, DecodeOut const& got) {
    return diffDecodeLogits(d, got, ref::runDecode(d));
}

// Profile ieee, B1: the first element of slot qNormed that differs from the reference's q output ("" when none).
std::string qNormedMismatch(ref::DecodeCase const& d, DecodeOut const& got) {
    ref::DecodeResult const want = ref::runDecode(d);
    for (size_t i = 0; i < want.qNormed.size(); ++i) {
        if (got.qNormed[i] != want.qNormed[i]) {
            size_t const b = i / 512, h = i / 128 % 4, dim = i % 128;
            std::ostringstream os;
            os << "B1 qNormed row b=" << b << " (ctx " << d.contextLengths[b] << ") head " << h << " dim " << dim
               << ": got 0x" << std::hex << got.qNormed[i] << ", reference 0x" << want.qNormed[i];
            return os.str();
        }
    }
    return "";
}

// B1: slot qNormed equals the reference's q output of every row (zeros for invalid rows), bit for bit.
QSA_PROP(DecodeStages, B1QPrepMatchesReference, 60) {
    judgeStageCase(false, pick(Fill::kGarbage, Fill::kNaN, Fill::kZero), 0, qNormedMismatch);
}

QSA_PROP(DecodeStages, B1QPrepHostilePoolMatchesReference, 40) {
    judgeStageCase(true, pick(Fill::kGarbage, Fill::kNaN, Fill::kZero), 2, qNormedMismatch);
}

// B2: slot logits holds the reference's logits for g < ctx/4 of every valid row, bit for bit (the block B1
// just completed included, read back from the pool; hardened: a dropped write or a hole reads +0.0).
QSA_PROP(DecodeStages, B2LogitsMatchReference, 60) {
    judgeStageCase(false, pick(Fill::kNaN, Fill::kGarbage, Fill::kZero), 1, logitsMismatch);
}

QSA_PROP(DecodeStages, B2LogitsHostilePoolMatchReference, 40) {
    judgeStageCase(true, pick(Fill::kNaN, Fill::kGarbage, Fill::kZero), 3, logitsMismatch);
}

// Profile `fast` (section 9.2): B1's q output inside its E1 intervals (zeros of invalid rows exact); B2's
// logits inside their E2 intervals from the implementation's own q slot and V-tails (judgeStageCase with
// fast::judgeDecodeQ / fast::judgeDecodeLogits).

QSA_PROP(DecodeStages, B1QPrepWithinFastEnclosure, 60) {
    judgeStageCase(false, pick(Fill::kGarbage, Fill::kNaN, Fill::kZero), 0, fast::judgeDecodeQ);
}

QSA_PROP(DecodeStages, B1QPrepHostilePoolWithinFastEnclosure, 60) {
    judgeStageCase(true, pick(Fill::kGarbage, Fill::kNaN, Fill::kZero), 2, fast::judgeDecodeQ);
}

QSA_PROP(DecodeStages, B2LogitsWithinFastEnclosure, 60) {
    judgeStageCase(false, pick(Fill::kNaN, Fill::kGarbage, Fill::kZero), 1, fast::judgeDecodeLogits);
}

QSA_PROP(DecodeStages, B2LogitsHostilePoolWithinFastEnclosure, 60) {
    judgeStageCase(true, pick(Fill::kNaN, Fill::kGarbage, Fill::kZero), 3, fast::judgeDecodeLogits);
}

} // namespace
} // namespace prop
} // namespace qsa

// Whole pipelines (contract section 5), the row-subset entry point and the workspace formulas (section 6).
//
// runPrefill follows section 5 stage by stage; its per-row tail (K2, selection, K4) runs row by row rather
// than in Rc-row chunks through a full sort: the contract makes every row independent of the chunking, and
// the first kSel entries of the stable descending sort of a K2 row (logits never NaN or -0.0, invisible
// entries -FLT_MAX below every visible one) are exactly the kSel smallest (~key, id) pairs. runPrefillByStages
// (byStages.cc) is the literal chunked composition; the tests hold the two against each other.
#include "reference/qsaReference.h"

#include "reference/byStages.h"
#include "reference/k2.h"
#include "reference/numerics.h"
#include "reference/parallel.h"
#include "reference/pool.h"
#include "reference/rowops.h"
#include "reference/stages.h"

#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>

namespace qsa {
namespace ref {
namespace {

void fail(char const* fn, std::string const& msg) {
    throw std::runtime_error(std::string(fn) + ": " + msg);
}

// Both counts > 0, or one message naming both.
void checkPositive(char const* fn, char const* nameA, int64_t a, char const* nameB, int64_t b) {
    if (a <= 0 || b <= 0) {
        fail(fn, std::string(nameA) + " = " + std::to_string(a) + ", " + nameB + " = " + std::to_string(b) +
                     " must be > 0");
    }
}

void checkSize(char const* fn, char const* what, size_t got, size_t want) {
    if (got != want) {
        fail(fn, std::string(what) + " has " + std::to_string(got) + " elements, expected " + std::to_string(want));
    }
}

size_t alignUp(size_t x) {
    return (x + 127) / 128 * 128;
}

void checkPrefillCase(char const* fn, PrefillCase const& c) {
    checkPositive(fn, "batchSize", c.batchSize, "seqLen", c.seqLen);
    size_t const rows = static_cast<size_t>(c.batchSize) * c.seqLen;
    checkSize(fn, "indexQk", c.indexQk.size(), rows * kQkWidth);
    checkSize(fn, "contextLengths", c.contextLengths.size(), static_cast<size_t>(c.batchSize));
    checkSize(fn, "wQ", c.wQ.size(), 128);
    checkSize(fn, "wK", c.wK.size(), 128);
    if (c.cosSin.size() % 64 != 0 || c.cosSin.size() / 64 < static_cast<size_t>(c.seqLen)) {
        fail(fn, "cosSin has " + std::to_string(c.cosSin.size()) +
                     " elements, expected [P >= S = " + std::to_string(c.seqLen) + ", 64]");
    }
}

// Rows of one sequence, sorted by t, scored in panels of 32, selected and expanded. qRow(i) gives the
// [4][128] T bits of row i; outRow(i) receives its 2051 entries; logitsRow(i) (may return null) receives its
// MB logits.
template <typename QRow, typename OutRow, typename LogitsRow>
void scoreSelectExpand(DType dt, int32_t seqLen, int32_t ctx, std::vector<int32_t> const& ts, KbarTiles const& tiles,
                       int numThreads, QRow const& qRow, OutRow const& outRow, LogitsRow const& logitsRow) {
    constexpr int kPanel = 32;
    int32_t const mb = numBlocks(seqLen);
    int64_t const numPanels = (static_cast<int64_t>(ts.size()) + kPanel - 1) / kPanel;
    parallelFor(numPanels, numThreads, 1, [&](int64_t pi) {
        int64_t const i0 = pi * kPanel;
        int const n = static_cast<int>(std::min<int64_t>(kPanel, static_cast<int64_t>(ts.size()) - i0));
        std::vector<float> lg(static_cast<size_t>(n) * mb);
        uint16_t const* qp[kPanel];
        float* lp[kPanel];
        int32_t nVis[kPanel];
        for (int i = 0; i < n; ++i) {
            int32_t const t = ts[i0 + i];
            nVis[i] = t < ctx ? (t + 1) / 4 : 0;
            qp[i] = qRow(i0 + i); // not read for a padded row
            lp[i] = lg.data() + static_cast<size_t>(i) * mb;
        }
        scoreRows(dt, qp, nVis, n, tiles, mb, lp);
        int32_t sel[kBlockTopK];
        for (int i = 0; i < n; ++i) {
            int32_t const t = ts[i0 + i];
            int32_t* out = outRow(i0 + i);
            if (t >= ctx) {
                fillRow(out); // padded row
            } else {
                int32_t const kSel = selectPrefillRow(lp[i], nVis[i], sel);
                expandRow(out, sel, kSel, nVis[i], (t + 1) % 4);
            }
            if (float* dst = logitsRow(i0 + i)) {
                std::copy(lp[i], lp[i] + mb, dst);
            }
        }
    });
}

} // namespace

PrefillResult runPrefill(PrefillCase const& c, int numThreads) {
    char const* fn = "runPrefill";
    FpEnvGuard guard;
    checkPrefillCase(fn, c);
    int32_t const B = c.batchSize;
    int32_t const S = c.seqLen;
    int32_t const mb = numBlocks(S);
    int64_t const rows = static_cast<int64_t>(B) * S;
    PrefillResult res;
    res.outIdx.assign(static_cast<size_t>(rows) * kIndexWidth, -1);
    if (c.keepLogits) {
        res.logits.assign(static_cast<size_t>(rows) * mb, -FLT_MAX);
    }
    prefillK1(fn, c, res); // K1a, K1b (paged when there is a pool) and the raw-k tail scatter
    // K2, selection, K4 per sequence.
    for (int32_t b = 0; b < B; ++b) {
        int32_t const ctx = caseCtx(c, b);
        KbarTiles const tiles = makeKbarTiles(c.dtype, res.kbar.data() + static_cast<int64_t>(b) * mb * 128, ctx / 4);
        std::vector<int32_t> ts(static_cast<size_t>(S));
        for (int32_t t = 0; t < S; ++t) {
            ts[t] = t;
        }
        int64_t const base = static_cast<int64_t>(b) * S;
        scoreSelectExpand(
            c.dtype, S, ctx, ts, tiles, numThreads, [&](int64_t i) { return res.qNormed.data() + (base + i) * 512; },
            [&](int64_t i) { return res.outIdx.data() + (base + i) * kIndexWidth; },
            [&](int64_t i) -> float* { return c.keepLogits ? res.logits.data() + (base + i) * mb : nullptr; });
    }
    return res;
}

std::vector<int32_t> runPrefillRows(PrefillCase const& c, std::vector<int64_t> const& rows, int numThreads) {
    char const* fn = "runPrefillRows";
    FpEnvGuard guard;
    checkPrefillCase(fn, c);
    int32_t const B = c.batchSize;
    int32_t const S = c.seqLen;
    int64_t const total = static_cast<int64_t>(B) * S;
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] < 0 || rows[i] >= total) {
            fail(fn, "rows[" + std::to_string(i) + "] = " + std::to_string(rows[i]) +
                         " outside [0, B*S = " + std::to_string(total) + ")");
        }
    }
    std::vector<int32_t> out(rows.size() * kIndexWidth, -1);
    float wqf[128];
    float wkf[128];
    toFloats(c.dtype, c.wQ.data(), wqf);
    toFloats(c.dtype, c.wK.data(), wkf);
    for (int32_t b = 0; b < B; ++b) {
        int32_t const ctx = caseCtx(c, b);
        // This sequence's requested rows, in t order (the output keeps the caller's order).
        std::vector<size_t> idx;
        for (size_t i = 0; i < rows.size(); ++i) {
            if (rows[i] / S == b) {
                idx.push_back(i);
            }
        }
        if (idx.empty()) {
            continue;
        }
        std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return rows[x] < rows[y]; });
        std::vector<int32_t> ts(idx.size());
        int32_t maxVis = 0;
        for (size_t i = 0; i < idx.size(); ++i) {
            ts[i] = static_cast<int32_t>(rows[idx[i]] % S);
            if (ts[i] < ctx) {
                maxVis = std::max(maxVis, (ts[i] + 1) / 4);
            }
        }
        int64_t const base = static_cast<int64_t>(b) * S;
        // kbar of the blocks these rows can see (K1b numerics).
        std::vector<uint16_t> kbar(static_cast<size_t>(maxVis) * 128);
        parallelFor(maxVis, numThreads, 16, [&](int64_t g) {
            uint16_t const* k[4];
            for (int j = 0; j < 4; ++j) {
                k[j] = c.indexQk.data() + (base + 4 * g + j) * kQkWidth + kNumHeads * kHeadDim;
            }
            kbarOfBlock(c.dtype, k, wkf, c.cosSin.data() + 4 * g * 64, c.rmsEps, kbar.data() + g * 128);
        });
        KbarTiles const tiles = makeKbarTiles(c.dtype, kbar.data(), maxVis);
        // q of the requested rows only (K1a numerics).
        std::vector<uint16_t> qn(idx.size() * 512, 0);
        parallelFor(static_cast<int64_t>(idx.size()), numThreads, 16, [&](int64_t i) {
            int32_t const t = ts[i];
            if (t >= ctx) {
                return;
            }
            for (int h = 0; h < kNumHeads; ++h) {
                normRopeT(c.dtype, c.indexQk.data() + (base + t) * kQkWidth + h * kHeadDim, wqf,
                          c.cosSin.data() + static_cast<int64_t>(t) * 64, c.rmsEps, qn.data() + i * 512 + h * kHeadDim);
            }
        });
        scoreSelectExpand(
            c.dtype, S, ctx, ts, tiles, numThreads, [&](int64_t i) { return qn.data() + i * 512; },
            [&](int64_t i) { return out.data() + idx[i] * kIndexWidth; }, [](int64_t) -> float* { return nullptr; });
    }
    return out;
}

DecodeResult runDecode(DecodeCase const& c, int numThreads) {
    char const* fn = "runDecode";
    (void)numThreads; // decode rows are cheap; the stages parallelize internally
    FpEnvGuard guard;
    checkPositive(fn, "batchSize", c.batchSize, "maxBlocks", c.maxBlocks);
    int32_t const B = c.batchSize;
    checkSize(fn, "indexQk", c.indexQk.size(), static_cast<size_t>(B) * kQkWidth);
    checkSize(fn, "contextLengths", c.contextLengths.size(), static_cast<size_t>(B));
    checkSize(fn, "wQ", c.wQ.size(), 128);
    checkSize(fn, "wK", c.wK.size(), 128);
    int64_t maxCtx = 0;
    for (int32_t b = 0; b < B; ++b) {
        int32_t const ctx = c.contextLengths[b];
        if (decodeRowValid(ctx, c.maxBlocks)) { // only a valid row reads cosSin
            maxCtx = std::max<int64_t>(maxCtx, ctx);
        }
    }
    if (c.cosSin.size() % 64 != 0 || static_cast<int64_t>(c.cosSin.size() / 64) < maxCtx) {
        fail(fn, "cosSin has " + std::to_string(c.cosSin.size()) +
                     " elements, expected [P >= max ctx = " + std::to_string(maxCtx) + ", 64]");
    }
    DecodeResult res;
    res.poolAfter = c.pool.data;
    PoolView const view = viewOf(fn, c.pool, B, res.poolAfter);
    res.qNormed.assign(static_cast<size_t>(B) * 512, 0);
    res.logits.assign(static_cast<size_t>(B) * c.maxBlocks, -FLT_MAX);
    res.outIdx.assign(static_cast<size_t>(B) * kIndexWidth, -1);
    // B1, B2.
    decodePrep(c.dtype, res.qNormed.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wQ.data(),
               c.wK.data(), c.rmsEps, view, B, c.maxBlocks);
    decodeScores(c.dtype, res.logits.data(), res.qNormed.data(), c.contextLengths.data(), view, B, c.maxBlocks);
    // B3: zero the split counters (rows b < B) when given, select, expand.
    if (c.hasSplitCounters) {
        checkSize(fn, "splitCounters", c.splitCounters.size(), static_cast<size_t>(B) * c.pool.dims.numKVHeads);
        res.splitCountersAfter = c.splitCounters;
        zeroSplitCounters(res.splitCountersAfter.data(), B, c.pool.dims.numKVHeads);
    }
    decodeSelect(res.outIdx.data(), res.logits.data(), c.contextLengths.data(), B, c.maxBlocks);
    return res;
}

int64_t prefillChunkRows(int32_t batchSize, int32_t seqLen) {
    checkPositive("prefillChunkRows", "batchSize", batchSize, "seqLen", seqLen);
    int64_t const mb = numBlocks(seqLen);
    // Rc = min(B*S, max(8388608 / MB, 256)), integer division.
    return std::min<int64_t>(static_cast<int64_t>(batchSize) * seqLen, std::max<int64_t>(8388608 / mb, 256));
}

PrefillWorkspaceLayout prefillWorkspaceLayout(int32_t batchSize, int32_t seqLen) {
    checkPositive("prefillWorkspaceLayout", "batchSize", batchSize, "seqLen", seqLen);
    size_t const B = static_cast<size_t>(batchSize);
    size_t const S = static_cast<size_t>(seqLen);
    size_t const mb = static_cast<size_t>(numBlocks(seqLen));
    size_t const tBytes = 2; // half and bf16 are both 2 bytes
    // Sort slots: min(B*S*MB, max(8388608, 256*MB)) elements each.
    size_t const sortElems = std::min(B * S * mb, std::max<size_t>(8388608, 256 * mb));
    PrefillWorkspaceLayout L;
    L.qNormedBytes = B * S * 4 * 128 * tBytes; // qNormed [B,S,4,128] T
    L.kbarBytes = B * mb * 128 * tBytes;       // kbar [B,MB,128] T
    L.qNormed = 0;
    L.kbar = L.qNormed + alignUp(L.qNormedBytes);
    L.keys = L.kbar + alignUp(L.kbarBytes);          // keys (FP32)
    L.keysAlt = L.keys + alignUp(sortElems * 4);     // keys-alt (FP32)
    L.values = L.keysAlt + alignUp(sortElems * 4);   // values (INT32)
    L.valuesAlt = L.values + alignUp(sortElems * 4); // values-alt (INT32)
    L.cubTemp = L.valuesAlt + alignUp(sortElems * 4);
    return L;
}

size_t prefillWorkspaceBytes(int32_t batchSize, int32_t maxSeqLen, size_t cubQueryBytes) {
    checkPositive("prefillWorkspaceBytes", "batchSize", batchSize, "maxSeqLen", maxSeqLen);
    // The slots for (B, maxS), then CUB temp = alignUp(max(query, 1 MiB)).
    return prefillWorkspaceLayout(batchSize, maxSeqLen).cubTemp +
           alignUp(std::max<size_t>(cubQueryBytes, size_t{1} << 20));
}

DecodeWorkspaceLayout decodeWorkspaceLayout(int32_t batchSize, int32_t maxBlocks) {
    checkPositive("decodeWorkspaceLayout", "batchSize", batchSize, "maxBlocks", maxBlocks);
    DecodeWorkspaceLayout L;
    L.qNormedBytes = static_cast<size_t>(batchSize) * 1 * 4 * 128 * 2; // qNormed [B,1,4,128] T
    L.logitsBytes = static_cast<size_t>(batchSize) * maxBlocks * 4;    // logits [B, maxBlocks] FP32
    L.qNormed = 0;
    L.logits = alignUp(L.qNormedBytes);
    return L;
}

size_t decodeWorkspaceBytes(int32_t maxBatchSize, int32_t maxBlocks) {
    checkPositive("decodeWorkspaceBytes", "maxBatchSize", maxBatchSize, "maxBlocks", maxBlocks);
    DecodeWorkspaceLayout const L = decodeWorkspaceLayout(maxBatchSize, maxBlocks);
    return L.logits + alignUp(L.logitsBytes);
}

} // namespace ref
} // namespace qsa

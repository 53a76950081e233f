// Host mirrors of every launcher (stages.h). Each entry point installs the default FP environment.
#include "reference/stages.h"

#include "reference/k2.h"
#include "reference/numerics.h"
#include "reference/parallel.h"
#include "reference/pool.h"
#include "reference/rowops.h"

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace qsa {
namespace ref {
namespace {

void requirePtr(char const* fn, char const* arg, void const* p) {
    if (p == nullptr) {
        throw std::runtime_error(std::string(fn) + ": " + arg + " is null");
    }
}

void requirePositive(char const* fn, char const* arg, int64_t v) {
    if (v <= 0) {
        throw std::runtime_error(std::string(fn) + ": " + arg + " = " + std::to_string(v) + " must be > 0");
    }
}

void requireRange(char const* fn, char const* what, int64_t lo, int64_t v, int64_t hi) {
    if (v < lo || v > hi) {
        throw std::runtime_error(std::string(fn) + ": " + what + " = " + std::to_string(v) + " outside [" +
                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
}

struct NamedPtr {
    char const* name;
    void const* p;
};

struct NamedCount {
    char const* name;
    int64_t v;
};

// The argument checks of every mirror, in the launchers' order (the first failure is the one reported): its
// pointers non-null (then pool.pool and pool.pageTable when there is a pool), its counts > 0, the pool's
// dimensions.
void requireArgs(char const* fn, std::initializer_list<NamedPtr> ptrs, std::initializer_list<NamedCount> counts,
                 PoolView const* pool = nullptr) {
    for (NamedPtr const& a : ptrs) {
        requirePtr(fn, a.name, a.p);
    }
    if (pool != nullptr) {
        requirePtr(fn, "pool.pool", pool->pool);
        requirePtr(fn, "pool.pageTable", pool->pageTable);
    }
    for (NamedCount const& a : counts) {
        requirePositive(fn, a.name, a.v);
    }
    if (pool != nullptr) {
        checkPoolDims(fn, pool->dims);
    }
}

// The row range [rowBegin, rowEnd) of the [batchSize * seqLen] rows (K2 and K4 work on one chunk).
void requireRows(char const* fn, int32_t batchSize, int32_t seqLen, int32_t rowBegin, int32_t rowEnd) {
    requireRange(fn, "rowEnd", 0, rowEnd, static_cast<int64_t>(batchSize) * seqLen);
    requireRange(fn, "rowBegin", 0, rowBegin, rowEnd);
}

} // namespace

void qPrep(DType dt, uint16_t* qNormed, uint16_t const* indexQk, float const* cosSin, int32_t const* contextLengths,
           uint16_t const* wQ, float rmsEps, int32_t batchSize, int32_t seqLen) {
    char const* fn = "qPrep";
    FpEnvGuard guard;
    requireArgs(fn,
                {{"qNormed", qNormed},
                 {"indexQk", indexQk},
                 {"cosSin", cosSin},
                 {"contextLengths", contextLengths},
                 {"wQ", wQ}},
                {{"batchSize", batchSize}, {"seqLen", seqLen}});
    float wf[128];
    toFloats(dt, wQ, wf);
    int64_t const rows = static_cast<int64_t>(batchSize) * seqLen;
    parallelFor(rows, 0, 64, [&](int64_t r) {
        int32_t const b = static_cast<int32_t>(r / seqLen);
        int32_t const t = static_cast<int32_t>(r % seqLen);
        int32_t const ctx = clampCtx(contextLengths[b], seqLen);
        uint16_t* out = qNormed + r * kNumHeads * kHeadDim;
        if (t >= ctx) {
            std::fill(out, out + kNumHeads * kHeadDim, uint16_t{0}); // exact zeros, input never read
            return;
        }
        for (int h = 0; h < kNumHeads; ++h) {
            normRopeT(dt, indexQk + r * kQkWidth + h * kHeadDim, wf, cosSin + static_cast<int64_t>(t) * 64, rmsEps,
                      out + h * kHeadDim);
        }
    });
}

namespace {

// K1b over [blockBegin, blockEnd) with the launcher's validity rule; calls onValid(b, g, kbarRow) for every
// valid block after writing it (the paged variant's V-tail write).
template <typename OnValid>
void kCompressImpl(char const* fn, DType dt, uint16_t* kbar, uint16_t const* indexQk, float const* cosSin,
                   int32_t const* contextLengths, uint16_t const* wK, float rmsEps, int32_t batchSize, int32_t seqLen,
                   int32_t numBlocks, int32_t blockBegin, int32_t blockEnd, int32_t pastLen, OnValid const& onValid) {
    requireArgs(
        fn, {{"kbar", kbar}, {"indexQk", indexQk}, {"cosSin", cosSin}, {"contextLengths", contextLengths}, {"wK", wK}},
        {{"batchSize", batchSize}, {"seqLen", seqLen}, {"numBlocks", numBlocks}});
    requireRange(fn, "pastLen", 0, pastLen, INT32_MAX - seqLen);
    requireRange(fn, "blockEnd", 0, blockEnd, numBlocks);
    requireRange(fn, "blockBegin", 0, blockBegin, blockEnd);
    float wf[128];
    toFloats(dt, wK, wf);
    int64_t const perSeq = blockEnd - blockBegin;
    int64_t const total = perSeq * batchSize;
    parallelFor(total, 0, 16, [&](int64_t item) {
        int32_t const b = static_cast<int32_t>(item / perSeq);
        int32_t const g = blockBegin + static_cast<int32_t>(item % perSeq);
        int64_t const hi = static_cast<int64_t>(pastLen) + seqLen;
        int64_t const ctx = std::min<int64_t>(std::max<int64_t>(contextLengths[b], 0), hi);
        int64_t const t0 = 4 * static_cast<int64_t>(g);
        uint16_t* out = kbar + (static_cast<int64_t>(b) * numBlocks + g) * 128;
        bool const valid = t0 + 3 < ctx && t0 >= pastLen && t0 + 3 < hi;
        if (!valid) {
            std::fill(out, out + 128, uint16_t{0}); // exact zeros, input never read
            return;
        }
        uint16_t const* k[4];
        for (int j = 0; j < 4; ++j) {
            int64_t const row = t0 + j - pastLen;
            k[j] = indexQk + (static_cast<int64_t>(b) * seqLen + row) * kQkWidth + kNumHeads * kHeadDim;
        }
        kbarOfBlock(dt, k, wf, cosSin + t0 * 64, rmsEps, out);
        onValid(b, g, out);
    });
}

} // namespace

void kCompress(DType dt, uint16_t* kbar, uint16_t const* indexQk, float const* cosSin, int32_t const* contextLengths,
               uint16_t const* wK, float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks,
               int32_t blockBegin, int32_t blockEnd, int32_t pastLen) {
    FpEnvGuard guard;
    kCompressImpl("kCompress", dt, kbar, indexQk, cosSin, contextLengths, wK, rmsEps, batchSize, seqLen, numBlocks,
                  blockBegin, blockEnd, pastLen, [](int32_t, int32_t, uint16_t const*) {});
}

void kCompressPaged(DType dt, uint16_t* kbar, uint16_t const* indexQk, float const* cosSin,
                    int32_t const* contextLengths, uint16_t const* wK, float rmsEps, int32_t batchSize, int32_t seqLen,
                    int32_t numBlocks, int32_t blockBegin, int32_t blockEnd, int32_t pastLen, PoolView const& pool) {
    char const* fn = "kCompressPaged";
    FpEnvGuard guard;
    requireArgs(fn, {}, {}, &pool);
    // Distinct valid blocks write distinct V-tail cells (a page id appears at most once per plane).
    kCompressImpl(fn, dt, kbar, indexQk, cosSin, contextLengths, wK, rmsEps, batchSize, seqLen, numBlocks, blockBegin,
                  blockEnd, pastLen, [&](int32_t b, int32_t g, uint16_t const* row) {
                      writeTail(pool, b, 4 * static_cast<int64_t>(g), Plane::kV, row);
                  });
}

void rawKTailScatter(DType /*dt*/, uint16_t const* indexQk, int32_t const* contextLengths, int32_t batchSize,
                     int32_t seqLen, PoolView const& pool) {
    char const* fn = "rawKTailScatter";
    FpEnvGuard guard;
    requireArgs(fn, {{"indexQk", indexQk}, {"contextLengths", contextLengths}},
                {{"batchSize", batchSize}, {"seqLen", seqLen}}, &pool);
    for (int32_t b = 0; b < batchSize; ++b) {
        int32_t const ctx = clampCtx(contextLengths[b], seqLen);
        for (int32_t t = ctx - ctx % 4; t < ctx; ++t) {
            // raw k, bit-unmodified, to its K-tail
            writeTail(pool, b, t, Plane::kK,
                      indexQk + (static_cast<int64_t>(b) * seqLen + t) * kQkWidth + kNumHeads * kHeadDim);
        }
    }
}

void idsFill(int32_t* ids, int32_t numRows, int32_t numBlocks) {
    char const* fn = "idsFill";
    requireArgs(fn, {{"ids", ids}}, {{"numRows", numRows}, {"numBlocks", numBlocks}});
    for (int64_t r = 0; r < numRows; ++r) {
        std::iota(ids + r * numBlocks, ids + (r + 1) * numBlocks, 0);
    }
}

void scores(DType dt, float* logits, uint16_t const* qNormed, uint16_t const* kbar, int32_t const* contextLengths,
            int32_t batchSize, int32_t seqLen, int32_t rowBegin, int32_t rowEnd, int numThreads) {
    char const* fn = "scores";
    FpEnvGuard guard;
    requireArgs(fn, {{"logits", logits}, {"qNormed", qNormed}, {"kbar", kbar}, {"contextLengths", contextLengths}},
                {{"batchSize", batchSize}, {"seqLen", seqLen}});
    requireRows(fn, batchSize, seqLen, rowBegin, rowEnd);
    int32_t const mb = numBlocks(seqLen);
    // Per sequence touched: tiles of the blocks any of its rows in range can see.
    std::vector<KbarTiles> tiles(static_cast<size_t>(batchSize));
    for (int32_t b = 0; b < batchSize; ++b) {
        int64_t const first = std::max<int64_t>(rowBegin, static_cast<int64_t>(b) * seqLen);
        int64_t const last = std::min<int64_t>(rowEnd, static_cast<int64_t>(b + 1) * seqLen);
        if (first >= last) {
            continue;
        }
        int32_t const ctx = clampCtx(contextLengths[b], seqLen);
        int32_t const tMax =
            std::min<int32_t>(static_cast<int32_t>(last - 1 - static_cast<int64_t>(b) * seqLen), ctx - 1);
        int32_t const need = tMax >= 0 ? (tMax + 1) / 4 : 0;
        tiles[b] = makeKbarTiles(dt, kbar + static_cast<int64_t>(b) * mb * 128, need);
    }
    // Panels of up to 32 consecutive rows of one sequence (each kbar tile serves the whole panel).
    constexpr int kPanel = 32;
    std::vector<int64_t> panelStart;
    for (int64_t r = rowBegin; r < rowEnd;) {
        panelStart.push_back(r);
        int64_t const seqEnd = (r / seqLen + 1) * seqLen;
        r = std::min<int64_t>({r + kPanel, seqEnd, static_cast<int64_t>(rowEnd)});
    }
    panelStart.push_back(rowEnd);
    int64_t const numPanels = static_cast<int64_t>(panelStart.size()) - 1;
    parallelFor(numPanels, numThreads, 1, [&](int64_t pi) {
        int64_t const r0 = panelStart[pi];
        int const n = static_cast<int>(panelStart[pi + 1] - r0);
        int32_t const b = static_cast<int32_t>(r0 / seqLen);
        int32_t const ctx = clampCtx(contextLengths[b], seqLen);
        uint16_t const* qp[kPanel];
        int32_t nVis[kPanel];
        float* out[kPanel];
        for (int i = 0; i < n; ++i) {
            int64_t const r = r0 + i;
            int32_t const t = static_cast<int32_t>(r % seqLen);
            nVis[i] = t < ctx ? (t + 1) / 4 : 0; // padded rows: nothing visible, read nothing
            qp[i] = qNormed + r * 512;
            out[i] = logits + (r - rowBegin) * mb;
        }
        scoreRows(dt, qp, nVis, n, tiles[b], mb, out);
    });
}

void sortRows(float const* keysIn, float* keysOut, int32_t const* valuesIn, int32_t* valuesOut, int32_t numRows,
              int32_t numBlocks) {
    char const* fn = "sortRows";
    FpEnvGuard guard;
    requireArgs(fn, {{"keysIn", keysIn}, {"keysOut", keysOut}, {"valuesIn", valuesIn}, {"valuesOut", valuesOut}},
                {{"numRows", numRows}, {"numBlocks", numBlocks}});
    parallelFor(numRows, 0, 8, [&](int64_t r) {
        float const* k = keysIn + r * numBlocks;
        std::vector<int32_t> perm(static_cast<size_t>(numBlocks));
        std::iota(perm.begin(), perm.end(), 0);
        // Descending radix order (-0.0 == +0.0, NaN by its bits), stable: equal keys keep input order.
        std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) { return cubKey(k[a]) > cubKey(k[b]); });
        for (int32_t i = 0; i < numBlocks; ++i) {
            keysOut[r * numBlocks + i] = k[perm[i]];
            valuesOut[r * numBlocks + i] = valuesIn[r * numBlocks + perm[i]];
        }
    });
}

void expand(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t batchSize, int32_t seqLen,
            int32_t rowBegin, int32_t rowEnd) {
    char const* fn = "expand";
    requireArgs(fn, {{"outIdx", outIdx}, {"sortedIds", sortedIds}, {"contextLengths", contextLengths}},
                {{"batchSize", batchSize}, {"seqLen", seqLen}});
    requireRows(fn, batchSize, seqLen, rowBegin, rowEnd);
    int32_t const mb = numBlocks(seqLen);
    for (int64_t r = rowBegin; r < rowEnd; ++r) {
        int32_t const b = static_cast<int32_t>(r / seqLen);
        int32_t const t = static_cast<int32_t>(r % seqLen);
        int32_t const ctx = clampCtx(contextLengths[b], seqLen);
        int32_t* out = outIdx + r * kIndexWidth;
        if (t >= ctx) {
            fillRow(out); // padded row
            continue;
        }
        int32_t const nVis = (t + 1) / 4;
        int32_t const kSel = std::min(kBlockTopK, nVis);
        expandRow(out, sortedIds + (r - rowBegin) * mb, kSel, nVis, (t + 1) % 4);
    }
}

// Floor, contract section 5: B2 writes logits for g < ctx / 4 only, so a row with ctx / 4 == maxBlocks <
// ceilDiv(ctx, 4) fits its logits row and is valid.
bool decodeRowValid(int32_t ctx, int32_t maxBlocks) {
    return ctx >= 1 && ctx / 4 <= maxBlocks;
}

void decodePrep(DType dt, uint16_t* qNormed, uint16_t const* indexQk, float const* cosSin,
                int32_t const* contextLengths, uint16_t const* wQ, uint16_t const* wK, float rmsEps,
                PoolView const& pool, int32_t batchSize, int32_t maxBlocks) {
    char const* fn = "decodePrep";
    FpEnvGuard guard;
    requireArgs(fn,
                {{"qNormed", qNormed},
                 {"indexQk", indexQk},
                 {"cosSin", cosSin},
                 {"wQ", wQ},
                 {"wK", wK},
                 {"contextLengths", contextLengths}},
                {{"batchSize", batchSize}, {"maxBlocks", maxBlocks}}, &pool);
    float wqf[128];
    float wkf[128];
    toFloats(dt, wQ, wqf);
    toFloats(dt, wK, wkf);
    for (int32_t b = 0; b < batchSize; ++b) {
        int32_t const ctx = contextLengths[b];
        uint16_t* q = qNormed + static_cast<int64_t>(b) * 512;
        if (!decodeRowValid(ctx, maxBlocks)) {
            std::fill(q, q + 512, uint16_t{0}); // invalid row: zero qNormed, no pool cell
            continue;
        }
        int64_t const pos = ctx - 1;
        uint16_t const* row = indexQk + static_cast<int64_t>(b) * kQkWidth;
        for (int h = 0; h < kNumHeads; ++h) {
            normRopeT(dt, row + h * kHeadDim, wqf, cosSin + pos * 64, rmsEps, q + h * kHeadDim);
        }
        uint16_t const* rawK = row + kNumHeads * kHeadDim;
        if (ctx % 4 != 0) {
            writeTail(pool, b, pos, Plane::kK, rawK); // the new raw k to its K-tail
            continue;
        }
        // Block g = ctx/4 - 1 is complete: tokens 4g..4g+2 from their K-tails, 4g+3 from the input.
        int64_t const g = ctx / 4 - 1;
        uint16_t tails[3][128];
        for (int j = 0; j < 3; ++j) {
            readTail(pool, b, 4 * g + j, Plane::kK, tails[j]);
        }
        uint16_t const* k[4] = {tails[0], tails[1], tails[2], rawK};
        uint16_t kb[128];
        kbarOfBlock(dt, k, wkf, cosSin + 4 * g * 64, rmsEps, kb);
        writeTail(pool, b, 4 * g, Plane::kV, kb); // the completing token's raw k is NOT stored
    }
}

void decodeScores(DType dt, float* logits, uint16_t const* qNormed, int32_t const* contextLengths, PoolView const& pool,
                  int32_t batchSize, int32_t maxBlocks) {
    char const* fn = "decodeScores";
    FpEnvGuard guard;
    requireArgs(fn, {{"logits", logits}, {"qNormed", qNormed}, {"contextLengths", contextLengths}},
                {{"batchSize", batchSize}, {"maxBlocks", maxBlocks}}, &pool);
    parallelFor(batchSize, 0, 1, [&](int64_t b) {
        int32_t const ctx = contextLengths[b];
        if (!decodeRowValid(ctx, maxBlocks)) {
            return; // invalid rows write nothing
        }
        float q[4][128];
        for (int h = 0; h < 4; ++h) {
            toFloats(dt, qNormed + b * 512 + h * 128, q[h]);
        }
        int32_t const nVis = ctx / 4;
        for (int32_t g = 0; g < nVis; ++g) {
            uint16_t kb[128];
            readTail(pool, static_cast<int32_t>(b), 4 * static_cast<int64_t>(g), Plane::kV, kb); // dropped: +0.0
            float kf[128];
            toFloats(dt, kb, kf);
            float dot[4];
            for (int h = 0; h < 4; ++h) {
                dot[h] = headDot(q[h], kf);
            }
            logits[b * maxBlocks + g] = logitOf(dot);
        }
    });
}

void decodeSelect(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t batchSize,
                  int32_t maxBlocks) {
    char const* fn = "decodeSelect";
    FpEnvGuard guard;
    requireArgs(fn, {{"outIdx", outIdx}, {"logits", logits}, {"contextLengths", contextLengths}},
                {{"batchSize", batchSize}, {"maxBlocks", maxBlocks}});
    std::vector<int32_t> sel(kBlockTopK);
    for (int32_t b = 0; b < batchSize; ++b) {
        int32_t const ctx = contextLengths[b];
        int32_t* out = outIdx + static_cast<int64_t>(b) * kIndexWidth;
        if (!decodeRowValid(ctx, maxBlocks)) {
            fillRow(out);
            continue;
        }
        int32_t const nVis = ctx / 4;
        int32_t const kSel = selectDecodeRow(logits + static_cast<int64_t>(b) * maxBlocks, nVis, sel.data());
        expandRow(out, sel.data(), kSel, nVis, ctx % 4);
    }
}

void zeroSplitCounters(int32_t* splitCounters, int32_t batchSize, int32_t numKVHeads) {
    char const* fn = "zeroSplitCounters";
    requireArgs(fn, {{"splitCounters", splitCounters}}, {{"batchSize", batchSize}, {"numKVHeads", numKVHeads}});
    std::fill(splitCounters, splitCounters + static_cast<int64_t>(batchSize) * numKVHeads, 0);
}

} // namespace ref
} // namespace qsa

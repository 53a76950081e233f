// Prefill runner and its workspace size (contract sections 2, 5, 6).
//
// Pipeline: K1a; K1b (paged + raw-k tail scatter when poolState != null); then per chunk of Rc rows:
// K2 (visible entries only) and one fused pass per row that selects the first kSel = min(512, nVis) entries
// of (logit desc, id asc), orders them in shared memory and writes K4 (prefill_select.cu, where the proof
// that this equals the contract's idsFill + CUB whole-row sort + K4 is given). The workspace layout of
// contract section 6 is unchanged: the keys-alt, values, values-alt and CUB temp slots are still reserved
// (and sized by CUB's query) although this runner no longer uses them.
#include <algorithm>

#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"
#include "kernels/qsaRunnerGuard.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int64_t kKeyBudget = 8388608; // elements per chunk (contract section 6)
constexpr size_t kMinCubBytes = size_t{1} << 20;

struct PrefillLayout {
    int64_t numBlocks = 0; // MB
    int64_t chunkRows = 0; // Rc
    int64_t keyElems = 0;  // elements of each key / value slot
    size_t qNormed = 0, kbar = 0, keys = 0, keysAlt = 0, values = 0, valuesAlt = 0, cubTemp = 0;
    size_t cubBytes = 0;
    size_t total = 0;
};

PrefillLayout prefillLayout(int32_t batchSize, int32_t seqLen) {
    PrefillLayout L;
    int64_t const rows = static_cast<int64_t>(batchSize) * seqLen;
    L.numBlocks = ceilDiv(seqLen, 4);
    L.chunkRows = std::min(rows, std::max(kKeyBudget / L.numBlocks, int64_t{256}));
    L.keyElems = std::min(rows * L.numBlocks, std::max(kKeyBudget, 256 * L.numBlocks));
    size_t off = 0;
    auto slot = [&off](size_t bytes) {
        size_t const at = off;
        off += alignUp128(bytes);
        return at;
    };
    L.qNormed = slot(static_cast<size_t>(rows) * kHeads * kDim * 2);
    L.kbar = slot(static_cast<size_t>(batchSize) * L.numBlocks * kDim * 2);
    if (QSA_MUTANT(25)) {
        L.kbar = L.qNormed + alignUp128(static_cast<size_t>(rows) * kDim * 2); // one head's size: overlaps qNormed
    }
    L.keys = slot(static_cast<size_t>(L.keyElems) * 4);
    L.keysAlt = slot(static_cast<size_t>(L.keyElems) * 4);
    L.values = slot(static_cast<size_t>(L.keyElems) * 4);
    L.valuesAlt = slot(static_cast<size_t>(L.keyElems) * 4);
    // CUB's own query for one chunk of Rc rows x MB (DoubleBuffer form, as the runner calls it), at least
    // 1 MiB. CUB's segmented radix sort over a DoubleBuffer keeps no item-sized storage in temp: its
    // answer does not grow with the item count (checked on the GPU by the workspace tests), so the
    // 1 MiB floor makes the slot the same for every S and the total monotone in S.
    L.cubBytes = alignUp128(std::max(sortDoubleBufferTempBytes(L.chunkRows, L.numBlocks), kMinCubBytes));
    L.cubTemp = slot(L.cubBytes);
    L.total = off;
    return L;
}

} // namespace
} // namespace qsa_detail

using namespace qsa_detail;

size_t getQsaIndexerWorkspaceSize(int32_t batchSize, int32_t maxSeqLen) {
    return workspaceSize("getQsaIndexerWorkspaceSize", "batchSize", batchSize, "maxSeqLen", maxSeqLen, prefillLayout);
}

namespace {

// The pipeline; runQsaIndexerPrefill (below) adds the alignment checks and names launcher errors.
template <typename T>
void prefillPipeline(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                     T const* wK, float rmsEps, void* workspace, size_t workspaceBytes, int32_t batchSize,
                     int32_t seqLen, QsaIndexerPoolState const* poolState, cudaStream_t stream) {
    char const* fn = "runQsaIndexerPrefill";
    checkRunnerArgs(fn, outIdx, indexQk, cosSin, contextLengths, wQ, wK, workspace, batchSize, "seqLen", seqLen);
    if (poolState != nullptr) {
        checkPoolState(fn, *poolState);
    }
    PrefillLayout const L = prefillLayout(batchSize, seqLen);
    checkWorkspaceBytes(fn, workspaceBytes, L.total, batchSize, "seqLen", seqLen);
    char* ws = static_cast<char*>(workspace);
    T* qNormed = reinterpret_cast<T*>(ws + L.qNormed);
    T* kbar = reinterpret_cast<T*>(ws + L.kbar);
    float* keys = reinterpret_cast<float*>(ws + L.keys);
    int32_t const MB = static_cast<int32_t>(L.numBlocks);

    launchQsaQPrep<T>(qNormed, indexQk, cosSin, contextLengths, wQ, rmsEps, batchSize, seqLen, stream);
    if (poolState != nullptr) {
        launchQsaKCompressPaged<T>(kbar, indexQk, cosSin, contextLengths, wK, rmsEps, batchSize, seqLen, MB, 0, MB, 0,
                                   *poolState, stream);
        launchQsaRawKTailScatter<T>(indexQk, contextLengths, batchSize, seqLen, *poolState, stream);
    } else {
        launchQsaKCompress<T>(kbar, indexQk, cosSin, contextLengths, wK, rmsEps, batchSize, seqLen, MB, 0, MB, 0,
                              stream);
    }
    int64_t const rows = static_cast<int64_t>(batchSize) * seqLen;
    for (int64_t r0 = 0; r0 < rows; r0 += L.chunkRows) {
        int64_t r1 = std::min(rows, r0 + L.chunkRows);
        if (QSA_MUTANT(24) && r1 < rows) {
            r1 -= 1;
        }
        launchScoresImpl<T>(fn, keys, qNormed, kbar, contextLengths, batchSize, seqLen, r0, r1,
                            /*writeInvisible=*/false, stream);
        // One warp per row where MB <= 2048 (the CTA kernel above that): same bits, measured 0.62 -> 0.41 ms for
        // B=8 S=4096's selection (PERFORMANCE.md); both kernels stay under test (prefill_select_test.cc).
        launchPrefillSelectExpand(outIdx, keys, contextLengths, seqLen, r0, r1, stream,
                                  PrefillSelectKernel::WarpPerRow);
    }
}

} // namespace

template <typename T>
void runQsaIndexerPrefill(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                          T const* wQ, T const* wK, float rmsEps, void* workspace, size_t workspaceBytes,
                          int32_t batchSize, int32_t seqLen, QsaIndexerPoolState const* poolState,
                          cudaStream_t stream) {
    char const* fn = "runQsaIndexerPrefill";
    requireRunnerAlignment(fn, outIdx, indexQk, cosSin, contextLengths, wQ, wK);
    if (poolState != nullptr) {
        requireAligned(fn, "poolState.poolPtr", poolState->poolPtr, 2);
        requireAligned(fn, "poolState.pageTable", poolState->pageTable, 4);
    }
    namedLaunches(fn, [&] {
        prefillPipeline<T>(outIdx, indexQk, cosSin, contextLengths, wQ, wK, rmsEps, workspace, workspaceBytes,
                           batchSize, seqLen, poolState, stream);
    });
}

template void runQsaIndexerPrefill<__half>(int32_t*, __half const*, float const*, int32_t const*, __half const*,
                                           __half const*, float, void*, size_t, int32_t, int32_t,
                                           QsaIndexerPoolState const*, cudaStream_t);
template void runQsaIndexerPrefill<__nv_bfloat16>(int32_t*, __nv_bfloat16 const*, float const*, int32_t const*,
                                                  __nv_bfloat16 const*, __nv_bfloat16 const*, float, void*, size_t,
                                                  int32_t, int32_t, QsaIndexerPoolState const*, cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

// Decode runner and its workspace size (contract sections 2, 5, 6): B1 and B2 as one launch (decode_scores.cu),
// then B3 with the split-counter zeroing folded in: two launches.
// No allocation, no CUB, no host synchronization: safe to capture in a CUDA graph.
#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"
#include "kernels/qsaRunnerGuard.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

struct DecodeLayout {
    size_t qNormed = 0, logits = 0, total = 0;
};

DecodeLayout decodeLayout(int32_t batchSize, int32_t maxBlocks) {
    DecodeLayout L;
    L.qNormed = 0;
    L.logits = alignUp128(static_cast<size_t>(batchSize) * kHeads * kDim * 2);
    L.total = L.logits + alignUp128(static_cast<size_t>(batchSize) * maxBlocks * 4);
    return L;
}

} // namespace
} // namespace qsa_detail

using namespace qsa_detail;

size_t getQsaIndexerDecodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks) {
    return workspaceSize("getQsaIndexerDecodeWorkspaceSize", "maxBatchSize", maxBatchSize, "maxBlocks", maxBlocks,
                         decodeLayout);
}

namespace {

// The pipeline; runQsaIndexerDecode (below) adds the alignment checks and names launcher errors.
template <typename T>
void decodePipeline(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                    T const* wK, float rmsEps, QsaIndexerPoolState const& poolState, int32_t* splitCounters,
                    void* workspace, size_t workspaceBytes, int32_t batchSize, int32_t maxBlocks, cudaStream_t stream) {
    char const* fn = "runQsaIndexerDecode";
    checkRunnerArgs(fn, outIdx, indexQk, cosSin, contextLengths, wQ, wK, workspace, batchSize, "maxBlocks", maxBlocks);
    checkPoolState(fn, poolState);
    DecodeLayout const L = decodeLayout(batchSize, maxBlocks);
    checkWorkspaceBytes(fn, workspaceBytes, L.total, batchSize, "maxBlocks", maxBlocks);
    char* ws = static_cast<char*>(workspace);
    T* qNormed = reinterpret_cast<T*>(ws + L.qNormed);
    float* logits = reinterpret_cast<float*>(ws + L.logits);
    launchDecodePrepScoresImpl<T>(fn, qNormed, logits, indexQk, cosSin, contextLengths, wQ, wK, rmsEps, poolState,
                                  batchSize, maxBlocks, stream);
    // B3 zeroes splitCounters (when non-null) inside its own launch, then selects and expands.
    int32_t* zeroed = splitCounters;
    if (QSA_MUTANT(29)) {
        zeroed = nullptr; // the zeroing dropped
    }
    launchDecodeSelectImpl(fn, outIdx, logits, contextLengths, zeroed, poolState.numKVHeads, batchSize, maxBlocks,
                           stream);
}

} // namespace

template <typename T>
void runQsaIndexerDecode(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                         T const* wQ, T const* wK, float rmsEps, QsaIndexerPoolState const& poolState,
                         int32_t* splitCounters, void* workspace, size_t workspaceBytes, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t stream) {
    char const* fn = "runQsaIndexerDecode";
    requireRunnerAlignment(fn, outIdx, indexQk, cosSin, contextLengths, wQ, wK);
    requireAligned(fn, "poolState.poolPtr", poolState.poolPtr, 2);
    requireAligned(fn, "poolState.pageTable", poolState.pageTable, 4);
    requireAligned(fn, "splitCounters", splitCounters, 4);
    namedLaunches(fn, [&] {
        decodePipeline<T>(outIdx, indexQk, cosSin, contextLengths, wQ, wK, rmsEps, poolState, splitCounters, workspace,
                          workspaceBytes, batchSize, maxBlocks, stream);
    });
}

template void runQsaIndexerDecode<__half>(int32_t*, __half const*, float const*, int32_t const*, __half const*,
                                          __half const*, float, QsaIndexerPoolState const&, int32_t*, void*, size_t,
                                          int32_t, int32_t, cudaStream_t);
template void runQsaIndexerDecode<__nv_bfloat16>(int32_t*, __nv_bfloat16 const*, float const*, int32_t const*,
                                                 __nv_bfloat16 const*, __nv_bfloat16 const*, float,
                                                 QsaIndexerPoolState const&, int32_t*, void*, size_t, int32_t, int32_t,
                                                 cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

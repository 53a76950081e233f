// Public API of the QSA indexer (contract section 2). Names and signatures are the contract's;
// do not change them without changing ../shared/CONTRACT.md.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trt_edgellm {
namespace kernel {

constexpr int32_t kQSA_INDEXER_NUM_HEADS = 4;
constexpr int32_t kQSA_INDEXER_HEAD_DIM = 128;
constexpr int32_t kQSA_COMPRESS_RATIO = 4;
constexpr int32_t kQSA_BLOCK_TOPK = 512;
constexpr int32_t kQSA_INDEX_BUDGET = kQSA_BLOCK_TOPK * kQSA_COMPRESS_RATIO;      // 2048
constexpr int32_t kQSA_INDEX_WIDTH = kQSA_INDEX_BUDGET + kQSA_COMPRESS_RATIO - 1; // 2051
constexpr int32_t kQSA_INDEXER_ROTARY_DIM = 64;
constexpr int32_t kQSA_INDEX_QK_WIDTH = (kQSA_INDEXER_NUM_HEADS + 1) * kQSA_INDEXER_HEAD_DIM; // 640
constexpr int32_t kQSA_TOKENS_PER_PAGE = 128;
constexpr int32_t kUNUSED_PAGE_ENTRY = -1;

struct QsaIndexerPoolState {
    void* poolPtr;            // [2*numPages, 128, numKVHeads, poolHeadDim] T
    int32_t const* pageTable; // [B, 2, maxPagesPerSeq]; plane 0 = K ids, plane 1 = V ids (already +numPages)
    int32_t maxPagesPerSeq;
    int32_t numPages;    // K-plane page count
    int32_t numKVHeads;  // e.g. 2
    int32_t poolHeadDim; // e.g. 384
    int32_t headSize;    // e.g. 256: column offset of the indexer tail
};

size_t getQsaIndexerWorkspaceSize(int32_t batchSize, int32_t maxSeqLen);

template <typename T>
void runQsaIndexerPrefill(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                          T const* wQ, T const* wK, float rmsEps, void* workspace, size_t workspaceBytes,
                          int32_t batchSize, int32_t seqLen, QsaIndexerPoolState const* poolState, cudaStream_t stream);

size_t getQsaIndexerDecodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks);

template <typename T>
void runQsaIndexerDecode(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                         T const* wQ, T const* wK, float rmsEps, QsaIndexerPoolState const& poolState,
                         int32_t* splitCounters, void* workspace, size_t workspaceBytes, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t stream);

} // namespace kernel
} // namespace trt_edgellm

// Host mirrors of every launcher of kernels/qsaIndexerKernels.h: same arguments (host memory, T as
// uint16_t bits selected by DType, no stream), same outputs, bit for bit. A GPU stage test fills the
// same inputs, runs both, and compares the outputs' bit patterns.
#pragma once

#include "reference/qsaReference.h"

namespace qsa {
namespace ref {

// Pool descriptor over host memory (the reference's QsaIndexerPoolState).
struct PoolView {
    uint16_t* pool;           // [2*numPages, 128, numKVHeads, poolHeadDim]
    int32_t const* pageTable; // [B, 2, maxPagesPerSeq]
    PoolDims dims;
};

void qPrep(DType dt, uint16_t* qNormed, uint16_t const* indexQk, float const* cosSin, int32_t const* contextLengths,
           uint16_t const* wQ, float rmsEps, int32_t batchSize, int32_t seqLen);

void kCompress(DType dt, uint16_t* kbar, uint16_t const* indexQk, float const* cosSin, int32_t const* contextLengths,
               uint16_t const* wK, float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks,
               int32_t blockBegin, int32_t blockEnd, int32_t pastLen);

void kCompressPaged(DType dt, uint16_t* kbar, uint16_t const* indexQk, float const* cosSin,
                    int32_t const* contextLengths, uint16_t const* wK, float rmsEps, int32_t batchSize, int32_t seqLen,
                    int32_t numBlocks, int32_t blockBegin, int32_t blockEnd, int32_t pastLen, PoolView const& pool);

void rawKTailScatter(DType dt, uint16_t const* indexQk, int32_t const* contextLengths, int32_t batchSize,
                     int32_t seqLen, PoolView const& pool);

void idsFill(int32_t* ids, int32_t numRows, int32_t numBlocks);

void scores(DType dt, float* logits, uint16_t const* qNormed, uint16_t const* kbar, int32_t const* contextLengths,
            int32_t batchSize, int32_t seqLen, int32_t rowBegin, int32_t rowEnd, int numThreads = 0);

// Stable descending sort of whole rows, CUB's radix order for floats (-0.0 == +0.0, NaN by its bits).
void sortRows(float const* keysIn, float* keysOut, int32_t const* valuesIn, int32_t* valuesOut, int32_t numRows,
              int32_t numBlocks);

void expand(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t batchSize, int32_t seqLen,
            int32_t rowBegin, int32_t rowEnd);

void decodePrep(DType dt, uint16_t* qNormed, uint16_t const* indexQk, float const* cosSin,
                int32_t const* contextLengths, uint16_t const* wQ, uint16_t const* wK, float rmsEps,
                PoolView const& pool, int32_t batchSize, int32_t maxBlocks);

void decodeScores(DType dt, float* logits, uint16_t const* qNormed, int32_t const* contextLengths, PoolView const& pool,
                  int32_t batchSize, int32_t maxBlocks);

// B3: same selected set as the sort, emitted in ascending block id (key u = sign ? ~bits : bits | 0x80000000).
void decodeSelect(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t batchSize,
                  int32_t maxBlocks);

void zeroSplitCounters(int32_t* splitCounters, int32_t batchSize, int32_t numKVHeads);

} // namespace ref
} // namespace qsa

// Per-stage launchers of the QSA indexer (contract sections 4-5). Every stage is public so that it
// can be tested on its own against the CPU reference (reference/qsaReference.h mirrors each one with
// the same inputs and outputs on host memory). All pointers are device pointers; every launcher is
// asynchronous on `stream`, validates its host-side arguments and throws std::runtime_error naming
// itself and the bad argument. Rows are r = b * seqLen + t. All offsets are 64-bit.
#pragma once

#include "kernels/qsaIndexerRunner.h"

namespace trt_edgellm {
namespace kernel {

// K1a q-prep. qNormed [B, S, 4, 128] T. Row (b, t) with t < ctx[b] gets normRope(q head h, wQ, pos = t)
// per head; rows t >= ctx[b] (ctx clamped to [0, S]) are exact zeros and their input is never read.
template <typename T>
void launchQsaQPrep(T* qNormed, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                    float rmsEps, int32_t batchSize, int32_t seqLen, cudaStream_t stream);

// K1b k-compress of blocks g in [blockBegin, blockEnd) of every sequence. Row j of indexQk is token
// pastLen + j (prefill: pastLen = 0). kbar [B, numBlocks, 128] T, block g at kbar[b][g]; blockEnd <=
// numBlocks. Block g is valid iff 4g + 3 < ctx[b] and 4g >= pastLen and 4g + 3 < pastLen + S: it gets
// normRope(T(mean of its 4 raw k), wK, pos = 4g); an invalid block is written as exact zeros and its
// input is never read. ctx is clamped to [0, pastLen + S].
template <typename T>
void launchQsaKCompress(T* kbar, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wK,
                        float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks, int32_t blockBegin,
                        int32_t blockEnd, int32_t pastLen, cudaStream_t stream);

// Paged K1b: launchQsaKCompress, and additionally every VALID kbar row goes to the V-tail of token 4g
// (page pageTable[b][1][4g >> 7], row 4g & 127, head 0, columns [headSize, headSize + 128)).
template <typename T>
void launchQsaKCompressPaged(T* kbar, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wK,
                             float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks, int32_t blockBegin,
                             int32_t blockEnd, int32_t pastLen, QsaIndexerPoolState const& poolState,
                             cudaStream_t stream);

// Raw-k tail scatter (prefill with a pool): raw k of tokens [ctx - ctx % 4, ctx) of each sequence goes,
// bit-unmodified, to its K-tail (page pageTable[b][0][t >> 7], row t & 127, head 0, tail columns).
template <typename T>
void launchQsaRawKTailScatter(T const* indexQk, int32_t const* contextLengths, int32_t batchSize, int32_t seqLen,
                              QsaIndexerPoolState const& poolState, cudaStream_t stream);

// idsFill: ids[r][g] = g for r < numRows, g < numBlocks (the sort's values: ascending block ids).
void launchQsaIdsFill(int32_t* ids, int32_t numRows, int32_t numBlocks, cudaStream_t stream);

// K2 scores for rows [rowBegin, rowEnd): logits[(r - rowBegin) * numBlocks + g] for g < numBlocks, with
// numBlocks = ceilDiv(S, 4). Visible (t < ctx[b], g < (t + 1) / 4) entries get the contract's logit;
// every other entry is -FLT_MAX and reads nothing. qNormed [B, S, 4, 128], kbar [B, numBlocks, 128].
template <typename T>
void launchQsaScores(float* logits, T const* qNormed, T const* kbar, int32_t const* contextLengths, int32_t batchSize,
                     int32_t seqLen, int32_t rowBegin, int32_t rowEnd, cudaStream_t stream);

// CUB temp bytes the sort stage needs for numRows x numBlocks (CUB's own query; needs a GPU). This is the
// query of the launcher's CUB call, which keeps its inputs (CUB then holds alternate buffers in temp).
// The prefill runner instead sorts over a DoubleBuffer (the keys-alt / values-alt slots), and its CUB temp
// slot is alignUp(max(that DoubleBuffer query for Rc x MB, 1 MiB)). Monotonicity of the workspace bound:
// the DoubleBuffer query of DeviceSegmentedRadixSort keeps no per-item or per-segment storage (255 bytes
// on an H200 with CUDA 13.0 for every shape from 4 x 1 to 1024 x 8192 and 256 x 32768), so the slot is
// the 1 MiB floor for every S and the total size is monotone in S.
size_t getQsaSortTempBytes(int32_t numRows, int32_t numBlocks);

// Sort: each of numRows rows of numBlocks (key, value) pairs, whole rows (invisible entries included),
// by key descending, stable (equal keys keep input order), with CUB DeviceSegmentedRadixSort
// SortPairsDescending. keysIn/valuesIn are left as they were.
void launchQsaSortRows(float const* keysIn, float* keysOut, int32_t const* valuesIn, int32_t* valuesOut,
                       int32_t numRows, int32_t numBlocks, void* cubTemp, size_t cubTempBytes, cudaStream_t stream);

// K4 expand for rows [rowBegin, rowEnd): sortedIds[(r - rowBegin) * numBlocks + i] is the i-th block of row r
// (numBlocks = ceilDiv(S, 4)). outIdx [B, S, 2051]: out[4i + j] = sel[i] * 4 + j for i < kSel, then the
// causal tail 4 nVis + j for j < (t + 1) % 4, then -1. Padded rows (t >= ctx[b]) are all -1.
void launchQsaExpand(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t batchSize,
                     int32_t seqLen, int32_t rowBegin, int32_t rowEnd, cudaStream_t stream);

// B1 decode prep: qNormed [B, 1, 4, 128] at pos = ctx - 1; raw k to its K-tail when ctx % 4 != 0, else
// the completed block ctx/4 - 1 is compressed (3 K-tails + the input token) into its V-tail. Invalid rows
// (ctx < 1 or ctx / 4 > maxBlocks, floor: contract section 5) write zero qNormed and no pool cell.
template <typename T>
void launchQsaDecodePrep(T* qNormed, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                         T const* wK, float rmsEps, QsaIndexerPoolState const& poolState, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t stream);

// B2 decode scores: logits[b * maxBlocks + g] for g < ctx[b] / 4, kbar read from the V-tails; only that
// valid prefix is written. Invalid rows write nothing.
template <typename T>
void launchQsaDecodeScores(float* logits, T const* qNormed, int32_t const* contextLengths,
                           QsaIndexerPoolState const& poolState, int32_t batchSize, int32_t maxBlocks,
                           cudaStream_t stream);

// B3 decode select + expand: the contract's selected set over logits[b][0, nVis), emitted in ascending
// block id, then the tail ctx % 4; invalid rows all -1. outIdx [B, 1, 2051]. No CUB, no allocation.
void launchQsaDecodeSelect(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t batchSize,
                           int32_t maxBlocks, cudaStream_t stream);

// splitCounters [B, numKVHeads] rows b < batchSize set to 0 (B3's first step when the pointer is non-null).
void launchQsaZeroSplitCounters(int32_t* splitCounters, int32_t batchSize, int32_t numKVHeads, cudaStream_t stream);

} // namespace kernel
} // namespace trt_edgellm

// Internal entry points shared by the runners and the public launchers (not part of the public API).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qsaIndexerKernels.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

// K2 over rows [rowBegin, rowEnd). writeInvisible = false leaves invisible entries untouched (the runner
// reads only each row's visible prefix); ids, when non-null, receives ids[(r - rowBegin) * MB + g] = g for
// every VISIBLE entry.
template <typename T>
void launchScoresImpl(char const* fn, float* logits, int32_t* ids, T const* qNormed, T const* kbar,
                      int32_t const* contextLengths, int32_t batchSize, int32_t seqLen, int64_t rowBegin,
                      int64_t rowEnd, bool writeInvisible, cudaStream_t stream);

// CUB's own temp-bytes query for the runner's DoubleBuffer segmented sort of numRows x numBlocks.
size_t sortDoubleBufferTempBytes(int64_t numRows, int64_t numBlocks);

// Runner sort of one chunk: rows [rowBegin, rowEnd) of the prefill; segment i is [i * MB, i * MB + kSel(row)),
// kSel = min(512, nVis), and the pairs start in keysAlt / valuesAlt (DoubleBuffer current = alt, as
// launchPrefillSelect writes them). Returns the buffer that holds the sorted ids.
int32_t const* sortChunkSelected(float* keys, float* keysAlt, int32_t* values, int32_t* valuesAlt,
                                 int32_t const* contextLengths, int32_t seqLen, int64_t rowBegin, int64_t rowEnd,
                                 void* cubTemp, size_t cubTempBytes, cudaStream_t stream);

// Candidate pre-selection of rows [rowBegin, rowEnd): logits [rows, MB] (visible prefix) -> the row's first
// kSel entries of (logit desc, id asc) as (key, id) pairs in ascending id order at the segment start.
void launchPrefillSelect(float const* logits, float* keysOut, int32_t* idsOut, int32_t const* contextLengths,
                         int32_t seqLen, int64_t rowBegin, int64_t rowEnd, cudaStream_t stream);

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

// K4 over rows [rowBegin, rowEnd) without argument checks (the runner has checked them).
void launchExpandImpl(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t seqLen,
                      int64_t rowBegin, int64_t rowEnd, cudaStream_t stream);

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

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
// sorts only each row's visible prefix, so they are never read); ids, when non-null, receives
// ids[(r - rowBegin) * MB + g] = g for every VISIBLE entry (the sort's values, idsFill fused).
template <typename T>
void launchScoresImpl(char const* fn, float* logits, int32_t* ids, T const* qNormed, T const* kbar,
                      int32_t const* contextLengths, int32_t batchSize, int32_t seqLen, int64_t rowBegin,
                      int64_t rowEnd, bool writeInvisible, cudaStream_t stream);

// CUB's own temp-bytes query for the runner's DoubleBuffer segmented sort of numRows x numBlocks.
size_t sortDoubleBufferTempBytes(int64_t numRows, int64_t numBlocks);

// Runner sort of one chunk: rows [rowBegin, rowEnd) of the prefill, each row sorted over its visible
// prefix [0, nVis) only (descending, stable). Returns true when the sorted output is in the alternate
// buffers (d_keys/d_values .Current() after CUB's call).
bool sortChunkVisiblePrefix(float* keys, float* keysAlt, int32_t* values, int32_t* valuesAlt,
                            int32_t const* contextLengths, int32_t seqLen, int64_t rowBegin, int64_t rowEnd,
                            void* cubTemp, size_t cubTempBytes, cudaStream_t stream);

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

// Internal entry points shared by the runners and the public launchers (not part of the public API).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qsaIndexerKernels.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

// K2 over rows [rowBegin, rowEnd). writeInvisible = false leaves invisible entries untouched and launches
// CTAs only for the block tiles some row of the call can see (the runner reads only each row's visible prefix).
template <typename T>
void launchScoresImpl(char const* fn, float* logits, T const* qNormed, T const* kbar, int32_t const* contextLengths,
                      int32_t batchSize, int32_t seqLen, int64_t rowBegin, int64_t rowEnd, bool writeInvisible,
                      cudaStream_t stream);

// CUB's own temp-bytes query for a DoubleBuffer segmented sort of numRows x numBlocks: it sizes the prefill
// workspace's CUB temp slot (contract section 6), which stays in the layout although the runner no longer
// calls CUB (its selection is launchPrefillSelectExpand).
size_t sortDoubleBufferTempBytes(int64_t numRows, int64_t numBlocks);

// Which kernel selects: one CTA per row (the runner's, measured on the H200), or one warp per row where
// MB <= 2048 (issue 24's candidate: checked on the CPU by //kernels:prefill_select_simt_test, not yet measured
// or run on a GPU; the CTA kernel where MB > 2048). Both give the same outIdx bits.
enum class PrefillSelectKernel { CtaPerRow, WarpPerRow };

// Runner selection + K4 of rows [rowBegin, rowEnd) in one pass per row (prefill_select.cu): logits
// [rows, MB] (only each row's visible prefix is read) -> outIdx rows, exactly the contract's order
// (logit descending, id ascending) of the first kSel = min(512, nVis) visible entries, then the tail.
void launchPrefillSelectExpand(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t seqLen,
                               int64_t rowBegin, int64_t rowEnd, cudaStream_t stream,
                               PrefillSelectKernel kernel = PrefillSelectKernel::CtaPerRow);

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

// B3 without argument checks: zeroes splitCounters rows b < batchSize first when splitCounters != nullptr
// (contract section 5, B3), then selects and expands every row. fn names the caller in launch errors.
void launchDecodeSelectImpl(char const* fn, int32_t* outIdx, float const* logits, int32_t const* contextLengths,
                            int32_t* splitCounters, int32_t numKVHeads, int32_t batchSize, int32_t maxBlocks,
                            cudaStream_t stream);

// B1 and B2 as one launch, without argument checks (the decode runner's; decode_scores.cu says how): qNormed,
// the pool cells and the logits' valid prefix end exactly as after launchQsaDecodePrep then launchQsaDecodeScores.
template <typename T>
void launchDecodePrepScoresImpl(char const* fn, T* qNormed, float* logits, T const* indexQk, float const* cosSin,
                                int32_t const* contextLengths, T const* wQ, T const* wK, float rmsEps,
                                QsaIndexerPoolState const& poolState, int32_t batchSize, int32_t maxBlocks,
                                cudaStream_t stream);

// K4 over rows [rowBegin, rowEnd) without argument checks (the runner has checked them).
void launchExpandImpl(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t seqLen,
                      int64_t rowBegin, int64_t rowEnd, cudaStream_t stream);

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

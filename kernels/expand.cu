// K4 expand (contract section 4): out[4i + j] = sel[i] * 4 + j (i < kSel), then the causal tail
// 4 nVis + j (j < (t + 1) % 4), then -1 up to 2051. Padded rows (t >= ctx[b]) are all -1.
#include "kernels/qsaCommon.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

__global__ void __launch_bounds__(256)
    expandKernel(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t seqLen,
                 int32_t numBlocks, int64_t rowBegin, int64_t rowEnd) {
    for (int64_t r = rowBegin + blockIdx.x; r < rowEnd; r += gridDim.x) {
        int64_t const b = r / seqLen;
        int const t = static_cast<int>(r - b * seqLen);
        int const ctx = clampCtx(contextLengths[b], seqLen);
        bool const padded = t >= ctx;
        if (QSA_MUTANT(23) && padded) {
            continue;
        }
        int const nVis = padded ? 0 : (t + 1) / 4;
        int const kSel = min(kTopK, nVis);
        int tail = padded ? 0 : (t + 1) % 4;
        if (QSA_MUTANT(22) && !padded) {
            tail = t % 4;
        }
        int32_t const* sel = sortedIds + (r - rowBegin) * numBlocks;
        int32_t* out = outIdx + r * kWidth;
        for (int p = threadIdx.x; p < kWidth; p += blockDim.x) {
            int32_t v = -1;
            if (p < 4 * kSel) {
                v = sel[p >> 2] * 4 + (p & 3);
            } else if (p < 4 * kSel + tail) {
                v = 4 * nVis + (p - 4 * kSel);
            }
            out[p] = v;
        }
    }
}

} // namespace

void launchExpandImpl(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t seqLen,
                      int64_t rowBegin, int64_t rowEnd, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    if (rowBegin == rowEnd) {
        return;
    }
    expandKernel<<<gridFor(rowEnd - rowBegin, 1), 256, 0, stream>>>(
        outIdx, sortedIds, contextLengths, seqLen, static_cast<int32_t>(ceilDiv(seqLen, 4)), rowBegin, rowEnd);
    checkLaunch("launchQsaExpand");
}

} // namespace qsa_detail

using namespace qsa_detail;

void launchQsaExpand(int32_t* outIdx, int32_t const* sortedIds, int32_t const* contextLengths, int32_t batchSize,
                     int32_t seqLen, int32_t rowBegin, int32_t rowEnd, cudaStream_t stream) {
    char const* fn = "launchQsaExpand";
    requirePtr(fn, "outIdx", outIdx);
    requirePtr(fn, "sortedIds", sortedIds);
    requirePtr(fn, "contextLengths", contextLengths);
    checkRowRange(fn, batchSize, seqLen, rowBegin, rowEnd);
    launchExpandImpl(outIdx, sortedIds, contextLengths, seqLen, rowBegin, rowEnd, stream);
}

} // namespace kernel
} // namespace trt_edgellm

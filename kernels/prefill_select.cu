// Prefill candidate pre-selection (runner only): for each row of a chunk, the first kSel = min(512, nVis)
// entries of (logit descending, id ascending) among the visible prefix, written in ascending id order as
// (key, id) pairs to the row's segment prefix of the sort's input buffers. The CUB sort of these kSel
// pairs (stable, descending) then yields exactly the first kSel entries of the contract's whole-row sort,
// which is all that K4 reads. Selection rule: kernels/qsaRadixSelect.cuh (the same set as B3).
#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"
#include "kernels/qsaRadixSelect.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 32; // rows up to 8192 visible blocks keep their keys in registers

__global__ void __launch_bounds__(kThreads)
    prefillSelectKernel(float const* logits, float* keysOut, int32_t* idsOut, int32_t const* contextLengths,
                        int32_t seqLen, int32_t numBlocks, int64_t rowBegin, int64_t rowEnd) {
    __shared__ RadixSelectSmem<kThreads> sm;
    for (int64_t r = rowBegin + blockIdx.x; r < rowEnd; r += gridDim.x) {
        int64_t const b = r / seqLen;
        int const t = static_cast<int>(r - b * seqLen);
        int const ctx = clampCtx(contextLengths[b], seqLen);
        int const nVis = t < ctx ? (t + 1) / 4 : 0;
        if (nVis == 0) {
            continue; // uniform over the block
        }
        int64_t const base = (r - rowBegin) * numBlocks;
        float const* row = logits + base;
        int const chunk = (nVis + kThreads - 1) / kThreads;
        int const gBegin = min(nVis, static_cast<int>(threadIdx.x) * chunk);
        int const gEnd = min(nVis, gBegin + chunk);
        auto emit = [&](int pos, int g, uint32_t u) {
            if (QSA_MUTANT(21)) {
                pos = min(nVis, kTopK) - 1 - pos; // candidates back to front: ties leave the sort in descending id
            }
            keysOut[base + pos] = radixKeyToFloat(u);
            idsOut[base + pos] = g;
        };
        if (chunk <= kItems) {
            CachedKeys<kItems> keys;
            keys.count = gEnd - gBegin;
#pragma unroll
            for (int k = 0; k < kItems; ++k) {
                keys.u[k] = k < keys.count ? radixKey(row[gBegin + k]) : 0u;
            }
            radixSelectEmit<kThreads>(sm, keys, nVis, kTopK, gBegin, chunk, emit);
        } else {
            RowKeys const keys{row, gBegin, gEnd};
            radixSelectEmit<kThreads>(sm, keys, nVis, kTopK, gBegin, chunk, emit);
        }
    }
}

} // namespace

void launchPrefillSelect(float const* logits, float* keysOut, int32_t* idsOut, int32_t const* contextLengths,
                         int32_t seqLen, int64_t rowBegin, int64_t rowEnd, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    if (rowBegin == rowEnd) {
        return;
    }
    int64_t const rows = rowEnd - rowBegin;
    int const grid = static_cast<int>(rows < (1 << 30) ? rows : (1 << 30));
    prefillSelectKernel<<<grid, kThreads, 0, stream>>>(logits, keysOut, idsOut, contextLengths, seqLen,
                                                       static_cast<int32_t>(ceilDiv(seqLen, 4)), rowBegin, rowEnd);
    checkLaunch("runQsaIndexerPrefill");
}

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

// B3 decode select + expand (contract sections 4-5), with the split-counter zeroing folded in (the runner's
// B3 is one launch), and the stand-alone split-counter zeroing launcher. No CUB, no allocation,
// deterministic, graph-capturable.
//
// Selection: kernels/qsaRadixSelect.cuh. nVis <= 512 selects every block and reads no logit: the row
// is then simply out[i] = i for i < ctx.
#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"
#include "kernels/qsaRadixSelect.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kThreads = 1024;
constexpr int kItems = 32; // rows up to 32768 blocks (ctx 131072) keep their keys in registers

__global__ void __launch_bounds__(kThreads)
    decodeSelectKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t maxBlocks,
                       int32_t* splitCounters, int32_t numKVHeads) {
    __shared__ RadixSelectSmem<kThreads> sm;
    int64_t const b = blockIdx.x;
    // B3 first zeroes splitCounters row b (contract section 5), valid row or not; nothing here reads them.
    if (splitCounters != nullptr) {
        for (int h = threadIdx.x; h < numKVHeads; h += kThreads) {
            splitCounters[b * numKVHeads + h] = 0;
        }
    }
    int32_t* out = outIdx + b * kWidth;
    int64_t const ctx = contextLengths[b];
    if (ctx < 1 || ctx / 4 > maxBlocks) {
        for (int p = threadIdx.x; p < kWidth; p += kThreads) {
            out[p] = -1; // invalid row
        }
        return;
    }
    int const nVis = static_cast<int>(QSA_MUTANT(34) ? (ctx + 3) / 4 : ctx / 4);
    int const tail = static_cast<int>(ctx % 4);
    if (nVis <= kTopK) {
        // Every block selected, in ascending id, then the tail: out[i] = i for i < 4 nVis + tail = ctx.
        for (int p = threadIdx.x; p < kWidth; p += kThreads) {
            out[p] = p < ctx ? p : -1;
        }
        return;
    }
    float const* row = logits + b * maxBlocks;
    int const chunk = (nVis + kThreads - 1) / kThreads;
    int const gBegin = min(nVis, static_cast<int>(threadIdx.x) * chunk);
    int const gEnd = min(nVis, gBegin + chunk);
    auto emit = [&](int pos, int g, uint32_t) {
        int32_t* o = out + 4 * pos;
        o[0] = 4 * g;
        o[1] = 4 * g + 1;
        o[2] = 4 * g + 2;
        o[3] = 4 * g + 3;
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
    // Tail 4 nVis + j at 2048 + j, then -1.
    for (int p = 4 * kTopK + threadIdx.x; p < kWidth; p += kThreads) {
        int const j = p - 4 * kTopK;
        out[p] = j < tail ? 4 * nVis + j : -1;
    }
}

__global__ void zeroSplitCountersKernel(int32_t* splitCounters, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        splitCounters[i] = 0;
    }
}

} // namespace
} // namespace qsa_detail

using namespace qsa_detail;

namespace qsa_detail {

void launchDecodeSelectImpl(char const* fn, int32_t* outIdx, float const* logits, int32_t const* contextLengths,
                            int32_t* splitCounters, int32_t numKVHeads, int32_t batchSize, int32_t maxBlocks,
                            cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    decodeSelectKernel<<<batchSize, kThreads, 0, stream>>>(outIdx, logits, contextLengths, maxBlocks, splitCounters,
                                                           numKVHeads);
    checkLaunch(fn);
}

} // namespace qsa_detail

void launchQsaDecodeSelect(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t batchSize,
                           int32_t maxBlocks, cudaStream_t stream) {
    char const* fn = "launchQsaDecodeSelect";
    requirePtr(fn, "outIdx", outIdx);
    requirePtr(fn, "logits", logits);
    requirePtr(fn, "contextLengths", contextLengths);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "maxBlocks", maxBlocks);
    launchDecodeSelectImpl(fn, outIdx, logits, contextLengths, nullptr, 0, batchSize, maxBlocks, stream);
}

void launchQsaZeroSplitCounters(int32_t* splitCounters, int32_t batchSize, int32_t numKVHeads, cudaStream_t stream) {
    char const* fn = "launchQsaZeroSplitCounters";
    requirePtr(fn, "splitCounters", splitCounters);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "numKVHeads", numKVHeads);
    int64_t const n = static_cast<int64_t>(batchSize) * numKVHeads;
    int64_t const grid = ceilDiv(n, 256);
    zeroSplitCountersKernel<<<static_cast<unsigned>(grid < 4096 ? grid : 4096), 256, 0, stream>>>(splitCounters, n);
    checkLaunch(fn);
}

} // namespace kernel
} // namespace trt_edgellm

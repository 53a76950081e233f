// K1a q-prep, K1b k-compress (dense and paged) and the prefill raw-k tail scatter (contract sections 4-5).
// One warp per (row, head) or per (sequence, block): the warp's 32 lanes are the contract's lanes l,
// so warpSum is the butterfly itself (shuffles, p[l] + p[l ^ m]).
#include "kernels/qsaCommon.cuh"
#include "kernels/qsaPrepDevice.cuh"
#include "kernels/qsaTestHooks.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kWarpsPerCta = 4;

// K1a: row (b, t), head h = warp index in the CTA. Rows t >= ctx[b] are exact zeros, input unread.
template <typename T>
__global__ void __launch_bounds__(128)
    qPrepKernel(T* qNormed, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                float rmsEps, int32_t batchSize, int32_t seqLen) {
    int const lane = threadIdx.x & 31;
    int const h = threadIdx.x >> 5;
    int64_t const numRows = static_cast<int64_t>(batchSize) * seqLen;
    for (int64_t row = blockIdx.x; row < numRows; row += gridDim.x) {
        int64_t const b = row / seqLen;
        int const t = static_cast<int>(row - b * seqLen);
        int const ctx = clampCtx(contextLengths[b], seqLen);
        T* out = qNormed + (row * kHeads + h) * kDim;
        if (t >= ctx) {
            storeZeroRowWarp(out, lane);
            continue;
        }
        T const* x = indexQk + row * kQkWidth + h * kDim;
        float sq[4], xo[4];
        loadRowWarp(x, lane, sq, xo);
        if (QSA_MUTANT(1)) {
            loadRowWarp(x, lane, sq, xo, /*sumSqReversed=*/true);
        }
        normRopeStoreWarp(out, sq, xo, wQ, rmsEps, cosSin, t, lane);
    }
}

// K1b (dense, optionally paged): one warp per (b, g), g in [blockBegin, blockEnd).
template <typename T, bool kPaged>
__global__ void __launch_bounds__(128)
    kCompressKernel(T* kbar, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wK,
                    float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks, int32_t blockBegin,
                    int32_t blockEnd, int32_t pastLen, PoolDev pool) {
    int const lane = threadIdx.x & 31;
    int64_t const span = blockEnd - blockBegin;
    int64_t const numWarps = static_cast<int64_t>(batchSize) * span;
    int64_t const total = static_cast<int64_t>(pastLen) + seqLen;
    for (int64_t w = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + (threadIdx.x >> 5); w < numWarps;
         w += static_cast<int64_t>(gridDim.x) * kWarpsPerCta) {
        int64_t const b = w / span;
        int64_t const g = blockBegin + (w - b * span);
        int64_t const ctx = clampCtx(contextLengths[b], total);
        T* out = kbar + (b * numBlocks + g) * kDim;
        int64_t const tok0 = 4 * g;
        // Valid iff the whole block is inside the context and inside this call's rows.
        bool valid = tok0 + 3 < ctx && tok0 >= pastLen && tok0 + 3 < total;
        if (QSA_MUTANT(12)) {
            valid = tok0 >= pastLen && tok0 + 3 < total;
        }
        if (!valid) {
            storeZeroRowWarp(out, lane);
            continue;
        }
        T const* k0 = indexQk + (b * seqLen + (tok0 - pastLen)) * kQkWidth + kRawKCol;
        float sq[4], xo[4];
        compressInputsWarp<T>(k0, k0 + kQkWidth, k0 + 2 * kQkWidth, k0 + 3 * kQkWidth, lane, sq, xo);
        uint16_t bits[4];
        int64_t ropePos = tok0; // a block's rope position is its first token
        if (QSA_MUTANT(11)) {
            ropePos = tok0 + 3;
        }
        normRopeBitsWarp<T>(bits, sq, xo, wK, rmsEps, cosSin, ropePos, lane);
        uint16_t* o16 = reinterpret_cast<uint16_t*>(out);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            o16[lane + 32 * j] = bits[j];
        }
        if (kPaged) {
            // Every valid kbar also goes to the V-tail of token 4g (dropped for a bad page entry).
            int64_t const off = poolTailOffset(pool, b, 1, tok0);
            if (off >= 0) {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    pool.pool[off + lane + 32 * j] = bits[j];
                }
            }
        }
    }
}

// Raw k of tokens [ctx - ctx % 4, ctx) to their K-tails, bit-unmodified. One CTA per sequence.
__global__ void __launch_bounds__(128)
    rawKTailScatterKernel(uint16_t const* indexQk, int32_t const* contextLengths, int32_t seqLen, PoolDev pool) {
    int64_t const b = blockIdx.x;
    int const ctx = clampCtx(contextLengths[b], seqLen);
    int tailBegin = ctx - ctx % 4; // the tokens of the last, incomplete block
    if (QSA_MUTANT(13) && ctx >= 4 && ctx % 4 == 0) {
        tailBegin = ctx - 4;
    }
    for (int t = tailBegin; t < ctx; ++t) {
        int64_t const off = poolTailOffset(pool, b, 0, t);
        if (off < 0) {
            continue;
        }
        uint16_t const* src = indexQk + (b * seqLen + t) * kQkWidth + kRawKCol;
        pool.pool[off + threadIdx.x] = src[threadIdx.x];
    }
}

template <typename T, bool kPaged>
void launchKCompressImpl(char const* fn, T* kbar, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                         T const* wK, float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks,
                         int32_t blockBegin, int32_t blockEnd, int32_t pastLen, PoolDev pool, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    requireNormRopePtrs(fn, "kbar", kbar, indexQk, cosSin, contextLengths, "wK", wK);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "seqLen", seqLen);
    requirePositive(fn, "numBlocks", numBlocks);
    requireNonNegative(fn, "pastLen", pastLen);
    if (blockBegin < 0 || blockBegin > blockEnd || blockEnd > numBlocks) {
        fail(fn, "need 0 <= blockBegin <= blockEnd <= numBlocks, got blockBegin ", blockBegin, ", blockEnd ", blockEnd,
             ", numBlocks ", numBlocks);
    }
    if (blockBegin == blockEnd) {
        return;
    }
    int64_t const warps = static_cast<int64_t>(batchSize) * (blockEnd - blockBegin);
    kCompressKernel<T, kPaged>
        <<<gridFor(warps, kWarpsPerCta), 128, 0, stream>>>(kbar, indexQk, cosSin, contextLengths, wK, rmsEps, batchSize,
                                                           seqLen, numBlocks, blockBegin, blockEnd, pastLen, pool);
    checkLaunch(fn);
}

} // namespace
} // namespace qsa_detail

using namespace qsa_detail;

template <typename T>
void launchQsaQPrep(T* qNormed, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                    float rmsEps, int32_t batchSize, int32_t seqLen, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    char const* fn = "launchQsaQPrep";
    requireNormRopePtrs(fn, "qNormed", qNormed, indexQk, cosSin, contextLengths, "wQ", wQ);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "seqLen", seqLen);
    int64_t const rows = static_cast<int64_t>(batchSize) * seqLen;
    // + 0 threads, or an invalid > 1024 under the failed-launch test hook (kernels/qsaTestHooks.h).
    unsigned const threads = 128u + qsa_test::invalidLaunchExtraThreads();
    qPrepKernel<T><<<gridFor(rows, 1), threads, 0, stream>>>(qNormed, indexQk, cosSin, contextLengths, wQ, rmsEps,
                                                             batchSize, seqLen);
    checkLaunch(fn);
}

template <typename T>
void launchQsaKCompress(T* kbar, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wK,
                        float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks, int32_t blockBegin,
                        int32_t blockEnd, int32_t pastLen, cudaStream_t stream) {
    launchKCompressImpl<T, false>("launchQsaKCompress", kbar, indexQk, cosSin, contextLengths, wK, rmsEps, batchSize,
                                  seqLen, numBlocks, blockBegin, blockEnd, pastLen, PoolDev{}, stream);
}

template <typename T>
void launchQsaKCompressPaged(T* kbar, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wK,
                             float rmsEps, int32_t batchSize, int32_t seqLen, int32_t numBlocks, int32_t blockBegin,
                             int32_t blockEnd, int32_t pastLen, QsaIndexerPoolState const& poolState,
                             cudaStream_t stream) {
    char const* fn = "launchQsaKCompressPaged";
    checkPoolState(fn, poolState);
    launchKCompressImpl<T, true>(fn, kbar, indexQk, cosSin, contextLengths, wK, rmsEps, batchSize, seqLen, numBlocks,
                                 blockBegin, blockEnd, pastLen, toPoolDev(poolState), stream);
}

template <typename T>
void launchQsaRawKTailScatter(T const* indexQk, int32_t const* contextLengths, int32_t batchSize, int32_t seqLen,
                              QsaIndexerPoolState const& poolState, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    char const* fn = "launchQsaRawKTailScatter";
    requirePtr(fn, "indexQk", indexQk);
    requirePtr(fn, "contextLengths", contextLengths);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "seqLen", seqLen);
    checkPoolState(fn, poolState);
    rawKTailScatterKernel<<<batchSize, 128, 0, stream>>>(reinterpret_cast<uint16_t const*>(indexQk), contextLengths,
                                                         seqLen, toPoolDev(poolState));
    checkLaunch(fn);
}

#define QSA_INSTANTIATE(T)                                                                                             \
    template void launchQsaQPrep<T>(T*, T const*, float const*, int32_t const*, T const*, float, int32_t, int32_t,     \
                                    cudaStream_t);                                                                     \
    template void launchQsaKCompress<T>(T*, T const*, float const*, int32_t const*, T const*, float, int32_t, int32_t, \
                                        int32_t, int32_t, int32_t, int32_t, cudaStream_t);                             \
    template void launchQsaKCompressPaged<T>(T*, T const*, float const*, int32_t const*, T const*, float, int32_t,     \
                                             int32_t, int32_t, int32_t, int32_t, int32_t, QsaIndexerPoolState const&,  \
                                             cudaStream_t);                                                            \
    template void launchQsaRawKTailScatter<T>(T const*, int32_t const*, int32_t, int32_t, QsaIndexerPoolState const&,  \
                                              cudaStream_t);

QSA_INSTANTIATE(__half)
QSA_INSTANTIATE(__nv_bfloat16)
#undef QSA_INSTANTIATE

} // namespace kernel
} // namespace trt_edgellm

// B1 decode prep (contract section 5): q-prep of the new token at pos = ctx - 1 (K1a numerics); then
// either its raw k goes to its K-tail (ctx % 4 != 0), or block g = ctx/4 - 1 is complete: tokens
// 4g .. 4g+2 from their K-tails (a dropped read is +0.0), token 4g+3 from the input, K1b numerics, kbar
// to the V-tail of token 4g (the completing token's own raw k is NOT stored). Invalid rows (ctx < 1 or
// ctx / 4 > maxBlocks, floor: contract section 5) write zero qNormed and no pool cell.
#include "kernels/qsaCommon.cuh"
#include "kernels/qsaDecodeDevice.cuh"
#include "kernels/qsaTestHooks.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

// One CTA per sequence: warps 0..3 = q heads, warp 4 = the k path (qsaDecodeDevice.cuh, shared with the decode
// runner's B1+B2 kernel).
template <typename T>
__global__ void __launch_bounds__(160)
    decodePrepKernel(T* qNormed, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                     T const* wK, float rmsEps, PoolDev pool, int32_t maxBlocks) {
    allowNextToStart(); // B2 may be scheduled now; it waits for this grid's writes before it reads
    int64_t const b = blockIdx.x;
    int const lane = threadIdx.x & 31;
    int const warp = threadIdx.x >> 5;
    int64_t const ctx = contextLengths[b];
    bool const valid = decodeRowValid(ctx, maxBlocks);
    T const* row = indexQk + b * kQkWidth;
    if (warp < kHeads) {
        T* out = qNormed + (b * kHeads + warp) * kDim;
        if (!valid) {
            storeZeroRowWarp(out, lane);
            return;
        }
        uint16_t bits[4];
        decodeQHeadBitsWarp<T>(bits, row, warp, wQ, rmsEps, cosSin, ctx, lane);
        storeBitsWarp(out, bits, lane);
        return;
    }
    if (valid) {
        decodeKPathWarp<T>(pool, b, ctx, row, wK, rmsEps, cosSin, lane);
    }
}

} // namespace
} // namespace qsa_detail

using namespace qsa_detail;

template <typename T>
void launchQsaDecodePrep(T* qNormed, T const* indexQk, float const* cosSin, int32_t const* contextLengths, T const* wQ,
                         T const* wK, float rmsEps, QsaIndexerPoolState const& poolState, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    char const* fn = "launchQsaDecodePrep";
    requireNormRopePtrs(fn, "qNormed", qNormed, indexQk, cosSin, contextLengths, "wQ", wQ);
    requirePtr(fn, "wK", wK);
    checkDecodeGeometry(fn, poolState, batchSize, maxBlocks);
    // + 0 threads, or an invalid > 1024 under the failed-launch test hook (kernels/qsaTestHooks.h).
    unsigned const threads = 160u + qsa_test::invalidLaunchExtraThreads();
    decodePrepKernel<T><<<batchSize, threads, 0, stream>>>(qNormed, indexQk, cosSin, contextLengths, wQ, wK, rmsEps,
                                                           toPoolDev(poolState), maxBlocks);
    checkLaunch(fn);
}

template void launchQsaDecodePrep<__half>(__half*, __half const*, float const*, int32_t const*, __half const*,
                                          __half const*, float, QsaIndexerPoolState const&, int32_t, int32_t,
                                          cudaStream_t);
template void launchQsaDecodePrep<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16 const*, float const*, int32_t const*,
                                                 __nv_bfloat16 const*, __nv_bfloat16 const*, float,
                                                 QsaIndexerPoolState const&, int32_t, int32_t, cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

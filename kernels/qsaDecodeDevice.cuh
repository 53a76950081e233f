// B1's row work (contract section 5, Decode), shared by the stand-alone B1 launcher (decode_prep.cu) and the
// decode runner's B1+B2 kernel (decode_scores.cu), so that both run one code and one set of mutant hooks.
// Lane l of a warp is the contract's lane l (qsaPrepDevice.cuh).
#pragma once

#include "kernels/qsaCommon.cuh"
#include "kernels/qsaPrepDevice.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

// The floor rule: a row is valid iff ctx >= 1 and ctx / 4 <= maxBlocks (ceilDiv would reject rows the seed's
// own tests run as normal ones).
__device__ __forceinline__ bool decodeRowValid(int64_t ctx, int32_t maxBlocks) {
    bool valid = ctx >= 1 && ctx / 4 <= maxBlocks;
    if (QSA_MUTANT(35)) {
        valid = ctx >= 1;
    }
    return valid;
}

// q-prep of head h of the new token at pos = ctx - 1 with K1a's numerics: the T bits of dims lane + 32 j.
template <typename T>
__device__ __forceinline__ void decodeQHeadBitsWarp(uint16_t bits[4], T const* row, int h, T const* wQ, float rmsEps,
                                                    float const* cosSin, int64_t ctx, int lane) {
    T const* x = row + h * kDim;
    float sq[4], xo[4];
    loadRowWarp(x, lane, sq, xo);
    if (QSA_MUTANT(31)) {
        loadRowWarp(x, lane, sq, xo, /*sumSqReversed=*/true);
    }
    normRopeBitsWarp<T>(bits, sq, xo, wQ, rmsEps, cosSin, ctx - 1, lane);
}

// The k path of a valid row, one warp: either the new token's raw k goes, bit-unmodified, to its K-tail
// (ctx % 4 != 0), or block g = ctx/4 - 1 is complete: tokens 4g .. 4g+2 from their K-tails (a dropped read is
// +0.0), token 4g+3 from the input, K1b numerics, kbar to the V-tail of token 4g (the completing token's own raw
// k is NOT stored). A dropped page writes nothing.
template <typename T>
__device__ __forceinline__ void decodeKPathWarp(PoolDev const& pool, int64_t b, int64_t ctx, T const* row, T const* wK,
                                                float rmsEps, float const* cosSin, int lane) {
    uint16_t const* k16 = reinterpret_cast<uint16_t const*>(row + kRawKCol);
    if (ctx % 4 != 0) {
        int64_t tok = ctx - 1; // the new token
        if (QSA_MUTANT(26)) {
            tok = ctx;
        }
        int64_t const off = poolTailOffset(pool, b, 0, tok);
        if (off >= 0) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                pool.pool[off + lane + 32 * j] = k16[lane + 32 * j];
            }
        }
        return;
    }
    int64_t const tok0 = ctx - 4; // block g = ctx/4 - 1 starts at 4g
    T const* kin[4];
#pragma unroll
    for (int j = 0; j < 3; ++j) {
        int64_t tok = tok0 + j;
        if (QSA_MUTANT(30)) {
            tok = tok0 + j + 1;
        }
        int64_t const off = poolTailOffset(pool, b, 0, tok);
        kin[j] = off >= 0 ? reinterpret_cast<T const*>(pool.pool + off) : nullptr;
    }
    kin[3] = row + kRawKCol;
    float sq[4], xo[4];
    compressInputsWarp<T>(kin[0], kin[1], kin[2], kin[3], lane, sq, xo);
    uint16_t bits[4];
    normRopeBitsWarp<T>(bits, sq, xo, wK, rmsEps, cosSin, tok0, lane);
    int64_t const off = poolTailOffset(pool, b, 1, tok0);
    if (off >= 0) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            pool.pool[off + lane + 32 * j] = bits[j];
        }
    }
}

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

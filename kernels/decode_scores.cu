// B2 decode scores (contract section 5): logits[b][g] for g < nVis = ctx / 4, K2 numerics, kbar read
// from the V-tail of token 4g (a dropped read is +0.0 for every element). Only the valid prefix is
// written; invalid rows (ctx < 1 or ctx / 4 > maxBlocks, floor: contract section 5) write nothing.
//
// A CTA of 128 threads owns 128 blocks of one sequence, one block per thread, so the contract's
// per-lane order runs inside one thread exactly as in K2 (see scores.cu): leaves l and l + 16, bit-
// reversed leaf order, binary-counter folding of the butterfly tree. The kbar rows are staged raw in
// shared memory as [block][l ^ (block & 15)][i] (8 bytes per lane l) so each thread reads its lane
// values with one conflict-free 8-byte load; q lives in shared memory as float4 [head][l].
#include <cfloat>

#include "kernels/qsaCommon.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kTile = 128;

__device__ __forceinline__ int kSlot(int blk, int l) {
    return blk * 32 + (l ^ (blk & 15));
}

template <typename T>
__device__ __forceinline__ float4 unpack4(uint2 v) {
    float4 f;
    f.x = bitsToFloat<T>(static_cast<uint16_t>(v.x & 0xFFFFu));
    f.y = bitsToFloat<T>(static_cast<uint16_t>(v.x >> 16));
    f.z = bitsToFloat<T>(static_cast<uint16_t>(v.y & 0xFFFFu));
    f.w = bitsToFloat<T>(static_cast<uint16_t>(v.y >> 16));
    return f;
}

__device__ __forceinline__ float b2LanePartial(float4 q, float4 k) {
    float p = lanePartial(q, k);
    if (QSA_MUTANT(32)) {
        p = lanePartial(q, k, /*reversed=*/true);
    }
    return p;
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(kTile)
    decodeScoresKernel(float* logits, T const* qNormed, int32_t const* contextLengths, PoolDev pool,
                       int32_t maxBlocks) {
    __shared__ uint2 ks[kTile * 32];
    __shared__ float4 qs[kHeads * 32];
    __shared__ int64_t pageBase[kTile / 32];
    waitForPrevious(); // B1's qNormed and V-tail writes (launched after it: launchAfterPrevious)
    allowNextToStart();
    int64_t const b = blockIdx.y;
    int64_t const ctx = contextLengths[b];
    if (ctx < 1 || ctx / 4 > maxBlocks) {
        return; // invalid row
    }
    int const nVis = static_cast<int>(ctx / 4);
    int const g0 = blockIdx.x * kTile;
    if (g0 >= nVis) {
        return;
    }
    int const nHere = min(kTile, nVis - g0);

    // The tile's 128 blocks are 512 tokens = 4 whole pages: V-tail offset of each page's row 0 (-1: dropped).
    if (threadIdx.x < kTile / 32) {
        pageBase[threadIdx.x] = poolTailOffset(pool, b, 1, 4 * (static_cast<int64_t>(g0) + 32 * threadIdx.x));
    }
    // q [4][128] -> float4 [h][l] = (q[l], q[l+32], q[l+64], q[l+96]).
    T const* q = qNormed + b * kHeads * kDim;
    {
        int const h = threadIdx.x >> 5;
        int const l = threadIdx.x & 31;
        T const* qh = q + h * kDim + l;
        qs[h * 32 + l] = make_float4(TypeOps<T>::toFloat(qh[0]), TypeOps<T>::toFloat(qh[32]),
                                     TypeOps<T>::toFloat(qh[64]), TypeOps<T>::toFloat(qh[96]));
    }
    __syncthreads();
    int64_t const rowStride = static_cast<int64_t>(pool.numKVHeads) * pool.poolHeadDim;
    if (kVec) {
        // Item (blk, grp): the 4 chunks c = grp + 4 i (dims 32 i + 8 grp .. + 7, i = 0..3) of block g0 + blk, one
        // 16-byte load each. Together they hold dims l, l + 32, l + 64, l + 96 of the 8 lanes l = 8 grp + k, so each
        // lane's slot leaves as ONE 8-byte store (was 8 halfword stores per chunk: ncu put B2 at 85% of the
        // L1/shared pipe with DRAM at 53%). A full tile gives every thread exactly kItemsPerThread items, all of
        // whose loads are issued before the first shared-memory store (bytes in flight per SM).
        auto load = [&](int idx, uint4(&v)[4]) {
            int const blk = idx >> 2;
            int const grp = idx & 3;
            int64_t const base = pageBase[blk >> 5];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                v[i] = make_uint4(0u, 0u, 0u, 0u); // dropped read: +0.0
                if (base >= 0) {
                    v[i] = __ldg(reinterpret_cast<uint4 const*>(pool.pool + base + (blk & 31) * 4 * rowStride +
                                                                8 * (grp + 4 * i)));
                }
            }
        };
        auto scatter = [&](int idx, uint4 const(&v)[4]) {
            int const blk = idx >> 2;
            int const grp = idx & 3;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                // Halfword k of each chunk: dim 32 i + 8 grp + k, i.e. component i of lane 8 grp + k.
                uint32_t const w0 = (&v[0].x)[k >> 1], w1 = (&v[1].x)[k >> 1];
                uint32_t const w2 = (&v[2].x)[k >> 1], w3 = (&v[3].x)[k >> 1];
                uint32_t const sel = (k & 1) ? 0x7632u : 0x5410u;
                ks[kSlot(blk, 8 * grp + k)] = make_uint2(__byte_perm(w0, w1, sel), __byte_perm(w2, w3, sel));
            }
        };
        constexpr int kItemsPerThread = 4; // kTile blocks x 4 lane groups over kTile threads
        if (nHere == kTile) {
            uint4 v[kItemsPerThread][4];
#pragma unroll
            for (int it = 0; it < kItemsPerThread; ++it) {
                load(threadIdx.x + it * kTile, v[it]);
            }
#pragma unroll
            for (int it = 0; it < kItemsPerThread; ++it) {
                scatter(threadIdx.x + it * kTile, v[it]);
            }
        } else {
            for (int idx = threadIdx.x; idx < nHere * 4; idx += kTile) {
                uint4 v[4];
                load(idx, v);
                scatter(idx, v);
            }
        }
    } else {
        // Item (blk, l): the lane's 4 dims of block g0 + blk.
        for (int idx = threadIdx.x; idx < nHere * 32; idx += kTile) {
            int const blk = idx >> 5;
            int const l = idx & 31;
            int64_t const base = pageBase[blk >> 5];
            uint2 v = make_uint2(0u, 0u); // dropped read: +0.0
            if (base >= 0) {
                uint16_t const* src = pool.pool + base + (blk & 31) * 4 * rowStride + l;
                v.x = static_cast<uint32_t>(src[0]) | (static_cast<uint32_t>(src[32]) << 16);
                v.y = static_cast<uint32_t>(src[64]) | (static_cast<uint32_t>(src[96]) << 16);
            }
            ks[kSlot(blk, l)] = v;
        }
    }
    __syncthreads();
    int const blk = threadIdx.x;
    if (blk >= nHere) {
        return;
    }
    float pend[kHeads][4];
    float p0[kHeads];
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        int const l = rev4(j);
        float4 const k0 = unpack4<T>(ks[kSlot(blk, l)]);
        float4 const k1 = unpack4<T>(ks[kSlot(blk, l + 16)]);
#pragma unroll
        for (int h = 0; h < kHeads; ++h) {
            p0[h] = b2LanePartial(qs[h * 32 + l], k0);
            float const a = __fadd_rn(p0[h], b2LanePartial(qs[h * 32 + l + 16], k1));
            butterflyFold(pend[h], a, j); // after j = 15: pend[h][3] = dot_h
        }
    }
    // ((relu0 + relu1) + relu2) + relu3, then the scale.
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
        int head = h;
        if (QSA_MUTANT(33)) {
            head = kHeads - 1 - h;
        }
        acc = __fadd_rn(acc, reluPos(pend[head][3]));
    }
    logits[b * maxBlocks + g0 + blk] = __fmul_rn(acc, logitScale());
}

} // namespace
} // namespace qsa_detail

using namespace qsa_detail;

template <typename T>
void launchQsaDecodeScores(float* logits, T const* qNormed, int32_t const* contextLengths,
                           QsaIndexerPoolState const& poolState, int32_t batchSize, int32_t maxBlocks,
                           cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    char const* fn = "launchQsaDecodeScores";
    requirePtr(fn, "logits", logits);
    requirePtr(fn, "qNormed", qNormed);
    requirePtr(fn, "contextLengths", contextLengths);
    checkDecodeGeometry(fn, poolState, batchSize, maxBlocks);
    if (batchSize > kMaxGridY) {
        fail(fn, "batchSize must be <= ", kMaxGridY, ", got ", batchSize);
    }
    dim3 const grid(static_cast<unsigned>(ceilDiv(maxBlocks, kTile)), static_cast<unsigned>(batchSize));
    // 16-byte loads of the V-tails when every tail is 16-byte aligned.
    bool const vec = poolState.poolHeadDim % 8 == 0 && poolState.headSize % 8 == 0 &&
                     reinterpret_cast<uintptr_t>(poolState.poolPtr) % 16 == 0;
    launchAfterPrevious(fn, vec ? decodeScoresKernel<T, true> : decodeScoresKernel<T, false>, grid, dim3(kTile), stream,
                        1u, logits, qNormed, contextLengths, toPoolDev(poolState), maxBlocks);
}

template void launchQsaDecodeScores<__half>(float*, __half const*, int32_t const*, QsaIndexerPoolState const&, int32_t,
                                            int32_t, cudaStream_t);
template void launchQsaDecodeScores<__nv_bfloat16>(float*, __nv_bfloat16 const*, int32_t const*,
                                                   QsaIndexerPoolState const&, int32_t, int32_t, cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

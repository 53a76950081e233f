// B2 decode scores (contract section 5): logits[b][g] for g < nVis = ctx / 4, K2 numerics, kbar read
// from the V-tail of token 4g (a dropped read is +0.0 for every element). Only the valid prefix is
// written; invalid rows (ctx < 1 or ctx / 4 > maxBlocks, floor: contract section 5) write nothing.
//
// A CTA of 128 threads owns 128 blocks of one sequence, one block per thread, so the contract's
// per-lane order runs inside one thread exactly as in K2 (see scores.cu): leaves l and l + 16, bit-
// reversed leaf order, binary-counter folding of the butterfly tree. The kbar rows are staged raw in
// shared memory as [block][l ^ (block & 15)][i] (8 bytes per lane l) so each thread reads its lane
// values with one conflict-free 8-byte load; q lives in shared memory as float4 [head][l].
//
// The decode runner launches the same kernel with kPrep: B1 and B2 as ONE launch (no B1 grid in the chain).
// Each CTA computes its row's q itself (warp h = head h, B1's code: qsaDecodeDevice.cuh) instead of reading
// B1's qNormed, and the row's first CTA also writes qNormed (the workspace slot stays observable, contract
// section 6). Of B1's pool writes B2 reads only one: the block ctx/4 - 1 that the new token completes. The CTA
// that scores that block runs B1's k path itself before it stages kbar, and stages it back from the pool after
// the barrier (a dropped write reads +0.0, exactly as the separate launches). No other CTA reads a cell written
// in this launch: a page id appears at most once per plane (contract section 5, preconditions).
#include <cfloat>

#include "kernels/qsaCommon.cuh"
#include "kernels/qsaDecodeDevice.cuh"
#include "kernels/qsaTestHooks.h"

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

// B1's inputs, read by the kPrep variant only.
template <typename T>
struct DecodePrepArgs {
    T* qNormed; // written by the row's first CTA
    T const* indexQk;
    float const* cosSin;
    T const* wQ;
    T const* wK;
    float rmsEps;
};

// 16 bytes of the pool: through the read-only path where nothing in this launch writes the pool (!kPrep).
template <bool kReadOnly>
__device__ __forceinline__ uint4 loadPool16(uint16_t const* p) {
    return kReadOnly ? __ldg(reinterpret_cast<uint4 const*>(p)) : *reinterpret_cast<uint4 const*>(p);
}

template <typename T, bool kVec, bool kPrep>
__global__ void __launch_bounds__(kTile)
    decodeScoresKernel(float* logits, T const* qNormed, DecodePrepArgs<T> prep, int32_t const* contextLengths,
                       PoolDev pool, int32_t maxBlocks) {
    __shared__ uint2 ks[kTile * 32];
    __shared__ float4 qs[kHeads * 32];
    __shared__ int64_t pageBase[kTile / 32];
    if (!kPrep) {
        waitForPrevious(); // B1's qNormed and V-tail writes (launched after it: launchAfterPrevious)
    }
    allowNextToStart();
    int64_t const b = blockIdx.y;
    int64_t const ctx = contextLengths[b];
    bool const valid = ctx >= 1 && ctx / 4 <= maxBlocks; // B2's own rule: decodeRowValid carries B1's hook 35
    int const nVis = valid ? static_cast<int>(ctx / 4) : 0;
    int const g0 = blockIdx.x * kTile;
    int const lane = threadIdx.x & 31;
    int const warp = threadIdx.x >> 5; // kPrep: head `warp` of q
    T const* qkRow = kPrep ? prep.indexQk + b * kQkWidth : nullptr;
    if (kPrep) {
        // B1's part of this CTA (uniform over the CTA): an invalid row's first CTA writes zero qNormed; the k
        // path runs in the CTA of the completed block (else the first CTA), before the barrier below that orders
        // its pool write before this CTA's kbar reads; a first CTA with no block to score finishes q here.
        T* const qOut = prep.qNormed + (b * kHeads + warp) * kDim;
        if (!decodeRowValid(ctx, maxBlocks)) {
            if (blockIdx.x == 0) {
                storeZeroRowWarp(qOut, lane);
            }
            return;
        }
        int const kOwner = ctx % 4 == 0 && nVis > 0 ? (nVis - 1) / kTile : 0;
        if (static_cast<int>(blockIdx.x) == kOwner && warp == 0) {
            decodeKPathWarp<T>(pool, b, ctx, qkRow, prep.wK, prep.rmsEps, prep.cosSin, lane);
        }
        if (g0 >= nVis) {
            if (blockIdx.x == 0) {
                uint16_t bits[4];
                decodeQHeadBitsWarp<T>(bits, qkRow, warp, prep.wQ, prep.rmsEps, prep.cosSin, ctx, lane);
                storeBitsWarp(qOut, bits, lane);
            }
            return;
        }
    } else if (g0 >= nVis) {
        return; // invalid row, or no block of this tile is visible
    }
    int const nHere = min(kTile, nVis - g0);

    // The tile's 128 blocks are 512 tokens = 4 whole pages: V-tail offset of each page's row 0 (-1: dropped).
    if (threadIdx.x < kTile / 32) {
        pageBase[threadIdx.x] = poolTailOffset(pool, b, 1, 4 * (static_cast<int64_t>(g0) + 32 * threadIdx.x));
    }
    __syncthreads(); // pageBase; kPrep: the k path's pool write
    // q [4][128] -> float4 [h][l] = (q[l], q[l+32], q[l+64], q[l+96]): B1's T-rounded q, read back or computed.
    auto stageQ = [&] {
        if (kPrep) {
            uint16_t bits[4];
            decodeQHeadBitsWarp<T>(bits, qkRow, warp, prep.wQ, prep.rmsEps, prep.cosSin, ctx, lane);
            if (blockIdx.x == 0) {
                storeBitsWarp(prep.qNormed + (b * kHeads + warp) * kDim, bits, lane);
            }
            qs[warp * 32 + lane] = make_float4(bitsToFloat<T>(bits[0]), bitsToFloat<T>(bits[1]),
                                               bitsToFloat<T>(bits[2]), bitsToFloat<T>(bits[3]));
        } else {
            T const* qh = qNormed + (b * kHeads + warp) * kDim + lane;
            qs[warp * 32 + lane] = make_float4(TypeOps<T>::toFloat(qh[0]), TypeOps<T>::toFloat(qh[32]),
                                               TypeOps<T>::toFloat(qh[64]), TypeOps<T>::toFloat(qh[96]));
        }
    };
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
                    v[i] = loadPool16<!kPrep>(pool.pool + base + (blk & 31) * 4 * rowStride + 8 * (grp + 4 * i));
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
            stageQ(); // while the loads are in flight
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
            stageQ();
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
        stageQ();
    }
    __syncthreads(); // ks and qs
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

namespace {

// 16-byte loads of the V-tails when every tail is 16-byte aligned.
bool vecTails(QsaIndexerPoolState const& poolState) {
    return poolState.poolHeadDim % 8 == 0 && poolState.headSize % 8 == 0 &&
           reinterpret_cast<uintptr_t>(poolState.poolPtr) % 16 == 0;
}

dim3 scoresGrid(char const* fn, int32_t batchSize, int32_t maxBlocks) {
    if (batchSize > kMaxGridY) {
        fail(fn, "batchSize must be <= ", kMaxGridY, ", got ", batchSize);
    }
    return dim3(static_cast<unsigned>(ceilDiv(maxBlocks, kTile)), static_cast<unsigned>(batchSize));
}

} // namespace

template <typename T>
void launchDecodePrepScoresImpl(char const* fn, T* qNormed, float* logits, T const* indexQk, float const* cosSin,
                                int32_t const* contextLengths, T const* wQ, T const* wK, float rmsEps,
                                QsaIndexerPoolState const& poolState, int32_t batchSize, int32_t maxBlocks,
                                cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    dim3 const grid = scoresGrid(fn, batchSize, maxBlocks);
    DecodePrepArgs<T> const prep{qNormed, indexQk, cosSin, wQ, wK, rmsEps};
    // The decode runner's first launch: + 0 threads, or an invalid > 1024 under the failed-launch test hook
    // (kernels/qsaTestHooks.h).
    unsigned const threads = kTile + qsa_test::invalidLaunchExtraThreads();
    // An ordinary launch: it reads what the stream's earlier work wrote (the pool, the inputs), so it starts
    // after that work; B3 then starts after it by programmatic dependent launch.
    if (vecTails(poolState)) {
        decodeScoresKernel<T, true, true>
            <<<grid, threads, 0, stream>>>(logits, nullptr, prep, contextLengths, toPoolDev(poolState), maxBlocks);
    } else {
        decodeScoresKernel<T, false, true>
            <<<grid, threads, 0, stream>>>(logits, nullptr, prep, contextLengths, toPoolDev(poolState), maxBlocks);
    }
    checkLaunch(fn);
}

template void launchDecodePrepScoresImpl<__half>(char const*, __half*, float*, __half const*, float const*,
                                                 int32_t const*, __half const*, __half const*, float,
                                                 QsaIndexerPoolState const&, int32_t, int32_t, cudaStream_t);
template void launchDecodePrepScoresImpl<__nv_bfloat16>(char const*, __nv_bfloat16*, float*, __nv_bfloat16 const*,
                                                        float const*, int32_t const*, __nv_bfloat16 const*,
                                                        __nv_bfloat16 const*, float, QsaIndexerPoolState const&,
                                                        int32_t, int32_t, cudaStream_t);

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
    dim3 const grid = scoresGrid(fn, batchSize, maxBlocks);
    DecodePrepArgs<T> const none{};
    launchAfterPrevious(
        fn, vecTails(poolState) ? decodeScoresKernel<T, true, false> : decodeScoresKernel<T, false, false>, grid,
        dim3(kTile), stream, 1u, logits, qNormed, none, contextLengths, toPoolDev(poolState), maxBlocks);
}

template void launchQsaDecodeScores<__half>(float*, __half const*, int32_t const*, QsaIndexerPoolState const&, int32_t,
                                            int32_t, cudaStream_t);
template void launchQsaDecodeScores<__nv_bfloat16>(float*, __nv_bfloat16 const*, int32_t const*,
                                                   QsaIndexerPoolState const&, int32_t, int32_t, cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

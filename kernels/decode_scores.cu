// B2 decode scores (contract section 5): logits[b][g] for g < nVis = ctx / 4, K2 numerics, kbar read
// from the V-tail of token 4g (a dropped read is +0.0 for every element). Only the valid prefix is
// written; invalid rows (ctx < 1 or ctx / 4 > maxBlocks, floor: contract section 5) write nothing.
//
// A CTA of 64 threads owns 128 blocks of one sequence; thread t scores blocks t and t + 64, each
// with the contract's per-lane order run inside the thread exactly as in K2 (see scores.cu): leaves
// l and l + 16, bit-reversed leaf order, binary-counter folding of the butterfly tree. The two
// blocks' chains are independent and interleaved; they share each q load (q is the same for every
// block of the row), which halves the q broadcast loads per block (ncu: B2 was bound by the
// L1/shared pipe). The kbar rows are staged raw in shared memory as 16-byte units [block][u] with
// u < 16 holding lanes u and u + 16 (8 bytes each, dims l, l + 32, l + 64, l + 96), so one
// conflict-free 16-byte load gives a thread both leaves of a step; q lives in shared memory as
// float4 [head][l].
#include <cfloat>

#include "kernels/qsaCommon.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kTile = 128;                   // blocks per CTA: 512 tokens = 4 whole pages
constexpr int kPerThread = 2;                // blocks scored per thread (sharing each q load)
constexpr int kThreads = kTile / kPerThread; // 64
constexpr int kUnits = 16;                   // 16-byte units per staged block
// CTAs per SM: 6 x 34.8 KB of shared memory fit in 228 KB; the bound caps registers at 168, which the 16-byte
// path's 32 loads in flight per thread (128 registers of data) fit (ptxas: 162, no spills).
constexpr int kMinCtas = 6;

// Unit u of block blk, XOR-swizzled on its low 3 bits (the bank group of a 16-byte unit) by blk & 7
// and by u's bit 3: 8 consecutive blocks reading the same u, and the vector scatter's 4 blocks x 2
// lane groups writing units 8 g + k, each hit 8 distinct bank groups.
__device__ __forceinline__ int kUnit(int blk, int u) {
    return blk * kUnits + (u ^ (blk & 7) ^ ((u >> 3) << 2));
}

template <typename T>
__device__ __forceinline__ float4 unpack4(uint32_t lo, uint32_t hi) {
    float4 f;
    f.x = bitsToFloat<T>(static_cast<uint16_t>(lo & 0xFFFFu));
    f.y = bitsToFloat<T>(static_cast<uint16_t>(lo >> 16));
    f.z = bitsToFloat<T>(static_cast<uint16_t>(hi & 0xFFFFu));
    f.w = bitsToFloat<T>(static_cast<uint16_t>(hi >> 16));
    return f;
}

__device__ __forceinline__ float b2LanePartial(float4 q, float4 k) {
    float p = lanePartial(q, k);
    if (QSA_MUTANT(32)) {
        p = lanePartial(q, k, /*reversed=*/true);
    }
    return p;
}

// Scores the blocks blk0 + n * kThreads (n < N) that are below nHere (blk0 < nHere) and writes their logits to
// out[n * kThreads]. Per block the operations and their order are those of one block alone: the N chains only
// share q's loads. A block at or past nHere recomputes blk0 (staged data only) and writes nothing: one code
// path for full and partial tiles (a separate partial-tile loop let the compiler hoist every q load out of it).
template <typename T, int N>
__device__ __forceinline__ void scoreBlocks(float* out, uint4 const* ks, float4 const* qs, int blk0, int nHere) {
    int row[N]; // the staged block each chain reads
#pragma unroll
    for (int n = 0; n < N; ++n) {
        row[n] = blk0 + n * kThreads < nHere ? blk0 + n * kThreads : blk0;
    }
    float pend[N][kHeads][4] = {};
    // Step j = 8 jh + jl (leaf l = bitreverse4(j) = 2 bitreverse3(jl) + jh). The halves run as a loop of two (code
    // size): below level 3 steps j and j + 8 fold alike; step 7 leaves the first half's subtree in pend[3],
    // step 15 adds its own half's subtree to it (the root: dot_h).
#pragma unroll 1
    for (int jh = 0; jh < 2; ++jh) {
#pragma unroll
        for (int jl = 0; jl < 8; ++jl) {
            int const l = 2 * (((jl & 1) << 2) | (jl & 2) | ((jl & 4) >> 2)) + jh;
            float4 k0[N];
            float4 k1[N];
#pragma unroll
            for (int n = 0; n < N; ++n) {
                uint4 const v = ks[kUnit(row[n], l)]; // lanes l (x, y) and l + 16 (z, w)
                k0[n] = unpack4<T>(v.x, v.y);
                k1[n] = unpack4<T>(v.z, v.w);
            }
#pragma unroll
            for (int h = 0; h < kHeads; ++h) {
                float4 const q0 = qs[h * 32 + l];
                float4 const q1 = qs[h * 32 + l + 16];
#pragma unroll
                for (int n = 0; n < N; ++n) {
                    // partial[l] + partial[l + 16]: the m = 16 level of warpSum for leaf l.
                    float const a = __fadd_rn(b2LanePartial(q0, k0[n]), b2LanePartial(q1, k1[n]));
                    float const first = pend[n][h][3];
                    butterflyFold(pend[n][h], a, jl);
                    if (jl == 7 && jh == 1) {
                        pend[n][h][3] = __fadd_rn(first, pend[n][h][3]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int n = 0; n < N; ++n) {
        // ((relu0 + relu1) + relu2) + relu3, then the scale.
        float acc = 0.0f;
#pragma unroll
        for (int h = 0; h < kHeads; ++h) {
            int head = h;
            if (QSA_MUTANT(33)) {
                head = kHeads - 1 - h;
            }
            acc = __fadd_rn(acc, reluPos(pend[n][head][3]));
        }
        if (blk0 + n * kThreads < nHere) {
            out[n * kThreads] = __fmul_rn(acc, logitScale());
        }
    }
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads, kMinCtas)
    decodeScoresKernel(float* logits, T const* qNormed, int32_t const* contextLengths, PoolDev pool,
                       int32_t maxBlocks) {
    __shared__ uint4 ks[kTile * kUnits];
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

    // The tile's 128 blocks are 4 whole pages: V-tail offset of each page's row 0 (-1: dropped).
    if (threadIdx.x < kTile / 32) {
        pageBase[threadIdx.x] = poolTailOffset(pool, b, 1, 4 * (static_cast<int64_t>(g0) + 32 * threadIdx.x));
    }
    // q [4][128] -> float4 [h][l] = (q[l], q[l+32], q[l+64], q[l+96]).
    T const* q = qNormed + b * kHeads * kDim;
    for (int idx = threadIdx.x; idx < kHeads * 32; idx += kThreads) {
        int const h = idx >> 5;
        int const l = idx & 31;
        T const* qh = q + h * kDim + l;
        qs[idx] = make_float4(TypeOps<T>::toFloat(qh[0]), TypeOps<T>::toFloat(qh[32]), TypeOps<T>::toFloat(qh[64]),
                              TypeOps<T>::toFloat(qh[96]));
    }
    __syncthreads();
    int64_t const rowStride = static_cast<int64_t>(pool.numKVHeads) * pool.poolHeadDim;
    if (kVec) {
        // Item (blk, g), g < 2: the 8 chunks c = g + 4 i and g + 2 + 4 i (dims 8 c .. 8 c + 7, i = 0..3) of block
        // g0 + blk, one 16-byte load each. They hold dims l, l + 32, l + 64, l + 96 of the lanes l = 8 g + k and
        // l + 16 (k < 8), so unit 8 g + k leaves as ONE 16-byte store. A full tile gives every thread exactly
        // kItemsPerThread items, all of whose loads are issued before the first shared-memory store.
        auto load = [&](int blk, int g, uint4(&v)[8]) {
            int64_t const base = pageBase[blk >> 5];
            uint16_t const* const src = pool.pool + base + (blk & 31) * 4 * rowStride + 8 * g;
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                // c < 4: chunk g + 4 c (lanes 8 g + k); c >= 4: chunk g + 2 + 4 (c - 4) (lanes 8 g + k + 16).
                v[c] = make_uint4(0u, 0u, 0u, 0u); // dropped read: +0.0
                if (base >= 0) {
                    v[c] = __ldg(reinterpret_cast<uint4 const*>(src + 8 * (2 * (c >> 2) + 4 * (c & 3))));
                }
            }
        };
        auto scatter = [&](int blk, int g, uint4 const(&v)[8]) {
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                // Halfword k of each chunk: dim 32 i + 8 g + k (+ 16), i.e. component i of lane 8 g + k (+ 16).
                uint32_t const sel = (k & 1) ? 0x7632u : 0x5410u;
                uint32_t w[8];
#pragma unroll
                for (int c = 0; c < 8; ++c) {
                    w[c] = (&v[c].x)[k >> 1];
                }
                ks[kUnit(blk, 8 * g + k)] = make_uint4(__byte_perm(w[0], w[1], sel), __byte_perm(w[2], w[3], sel),
                                                       __byte_perm(w[4], w[5], sel), __byte_perm(w[6], w[7], sel));
            }
        };
        // Item idx is (blk, g) = (idx >> 1, idx & 1); thread t's items t + 64 p of a full tile are row t >> 1 of
        // page p (p < 4), lane group t & 1.
        constexpr int kItemsPerThread = kTile * 2 / kThreads;
        static_assert(kItemsPerThread * 32 == kTile, "a full tile's items: one per page and thread");
        if (nHere == kTile) {
            int const r = threadIdx.x >> 1;
            int const g = threadIdx.x & 1;
            uint4 v[kItemsPerThread][8];
#pragma unroll
            for (int p = 0; p < kItemsPerThread; ++p) {
                load(32 * p + r, g, v[p]);
            }
#pragma unroll
            for (int p = 0; p < kItemsPerThread; ++p) {
                scatter(32 * p + r, g, v[p]);
            }
        } else {
            for (int idx = threadIdx.x; idx < nHere * 2; idx += kThreads) {
                uint4 v[8];
                load(idx >> 1, idx & 1, v);
                scatter(idx >> 1, idx & 1, v);
            }
        }
    } else {
        // Item (blk, u), u < 16: the 4 dims of lanes u and u + 16 of block g0 + blk.
        for (int idx = threadIdx.x; idx < nHere * kUnits; idx += kThreads) {
            int const blk = idx >> 4;
            int const u = idx & 15;
            int64_t const base = pageBase[blk >> 5];
            uint4 v = make_uint4(0u, 0u, 0u, 0u); // dropped read: +0.0
            if (base >= 0) {
                uint16_t const* src = pool.pool + base + (blk & 31) * 4 * rowStride + u;
                v.x = static_cast<uint32_t>(src[0]) | (static_cast<uint32_t>(src[32]) << 16);
                v.y = static_cast<uint32_t>(src[64]) | (static_cast<uint32_t>(src[96]) << 16);
                v.z = static_cast<uint32_t>(src[16]) | (static_cast<uint32_t>(src[48]) << 16);
                v.w = static_cast<uint32_t>(src[80]) | (static_cast<uint32_t>(src[112]) << 16);
            }
            ks[kUnit(blk, u)] = v;
        }
    }
    __syncthreads();
    int const t = threadIdx.x;
    if (t >= nHere) {
        return;
    }
    scoreBlocks<T, kPerThread>(logits + b * maxBlocks + g0 + t, ks, qs, t, nHere);
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
    launchAfterPrevious(fn, vec ? decodeScoresKernel<T, true> : decodeScoresKernel<T, false>, grid, dim3(kThreads),
                        stream, 1u, logits, qNormed, contextLengths, toPoolDev(poolState), maxBlocks);
}

template void launchQsaDecodeScores<__half>(float*, __half const*, int32_t const*, QsaIndexerPoolState const&, int32_t,
                                            int32_t, cudaStream_t);
template void launchQsaDecodeScores<__nv_bfloat16>(float*, __nv_bfloat16 const*, int32_t const*,
                                                   QsaIndexerPoolState const&, int32_t, int32_t, cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

// K2 scores (contract section 4): logit(r, g) for the visible entries, -FLT_MAX elsewhere.
//
// Register-tiled: a CTA of 128 threads owns 64 rows x 32 blocks of one sequence; each thread computes
// 4 rows x 4 blocks. The contract's per-lane order is kept exactly inside one thread: for every
// (row, block, head), partial[l] = fma chain over i = 0..3 of q[l + 32i] * k[l + 32i] starting at +0.0,
// and the butterfly warpSum is evaluated as the tree it equals: a[l] = p[l] + p[l+16], then
// b[l] = a[l] + a[l+8], c[l] = b[l] + b[l+4], d[l] = c[l] + c[l+2], e = d[0] + d[1] (float addition
// is commutative, so lane l's p[l] + p[l^m] and lane l^m's p[l^m] + p[l] are the same bits). The
// leaves are visited in bit-reversed order so the tree folds like a binary counter with 4 pending
// values. Heads then add in order ((relu0 + relu1) + relu2) + relu3 (starting from +0.0 changes no bit
// since every relu is >= +0.0), times 0x3DB504F3.
//
// Shared memory holds q (one head at a time) and kbar as floats, element d = l + 32 i at float4 slot
// (l ^ (row & 7)) so that a warp's 4 q rows and 8 k rows hit distinct banks.
#include <algorithm>
#include <cfloat>

#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kTileRows = 64;
constexpr int kTileBlocks = 32;
constexpr int kThreads = 128;

__device__ __forceinline__ int swz(int row, int l) {
    return row * 32 + (l ^ (row & 7));
}

// Stage rows [0, kRows) of a 128-wide T matrix into shared float4 slots; rows >= nValid read as +0.0
// (padded q rows and invisible blocks are never read). Every load of the stage is issued before the first
// conversion: the fixed trip count lets them all be in flight at once, so a stage costs one L2 round trip,
// not one per iteration (ncu on the H200: 40% of the inner loop's stall samples were long-scoreboard waits
// on these loads, staged one iteration at a time).
template <int kRows, typename T>
__device__ __forceinline__ void stageRows(float4* dst, T const* src, int64_t srcStride, int nValid) {
    constexpr int kIters = kRows * 32 / kThreads;
    static_assert(kRows * 32 % kThreads == 0, "whole iterations");
    uint16_t bits[kIters][4];
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        int const idx = static_cast<int>(threadIdx.x) + it * kThreads;
        int const row = idx >> 5;
        int const l = idx & 31;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            bits[it][i] = 0; // +0.0
        }
        if (row < nValid) {
            uint16_t const* p = reinterpret_cast<uint16_t const*>(src + row * srcStride + l);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                bits[it][i] = p[32 * i];
            }
        }
    }
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        int const idx = static_cast<int>(threadIdx.x) + it * kThreads;
        dst[swz(idx >> 5, idx & 31)] = make_float4(bitsToFloat<T>(bits[it][0]), bitsToFloat<T>(bits[it][1]),
                                                   bitsToFloat<T>(bits[it][2]), bitsToFloat<T>(bits[it][3]));
    }
}

__device__ __forceinline__ float k2LanePartial(float4 q, float4 k) {
    float p = lanePartial(q, k);
    if (QSA_MUTANT(14)) {
        p = lanePartial(q, k, /*reversed=*/true);
    }
    return p;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    scoresKernel(float* logits, int32_t* ids, T const* qNormed, T const* kbar, int32_t const* contextLengths,
                 int32_t seqLen, int32_t numBlocks, int64_t rowBegin, int64_t rowEnd, int64_t tileStart,
                 int32_t tilesPerSeq, int32_t gTiles, bool writeInvisible) {
    __shared__ float4 qs[kTileRows * 32];
    __shared__ float4 ks[kTileBlocks * 32];

    int64_t const tile = tileStart + blockIdx.x;
    int64_t const b = tile / tilesPerSeq;
    int const t0 = static_cast<int>(tile - b * tilesPerSeq) * kTileRows;
    int64_t const seqRow0 = b * seqLen;
    int const ctx = clampCtx(contextLengths[b], seqLen);
    // Rows of this tile inside [rowBegin, rowEnd) and the sequence: t in [tLo, tHi).
    int const tLo = static_cast<int>(max(static_cast<int64_t>(t0), rowBegin - seqRow0));
    int const tHi = static_cast<int>(min(static_cast<int64_t>(min(t0 + kTileRows, seqLen)), rowEnd - seqRow0));
    int const tVisHi = min(tHi, ctx);                  // rows t < tVisHi may have visible entries
    int const nVisMax = tVisHi > tLo ? tVisHi / 4 : 0; // nVis of the tile's last visible row

    int const tx = threadIdx.x & 7;  // blocks g0 + tx + 8 jc
    int const ty = threadIdx.x >> 3; // rows t0 + ty + 16 ir
    float const negMax = -FLT_MAX;

    for (int gy = blockIdx.y; gy < gTiles; gy += gridDim.y) {
        int const g0 = gy * kTileBlocks;
        int const gHi = min(g0 + kTileBlocks, numBlocks);
        if (g0 >= nVisMax) {
            // Whole tile invisible: reads nothing.
            if (writeInvisible) {
                for (int idx = threadIdx.x; idx < kTileRows * kTileBlocks; idx += kThreads) {
                    int const t = t0 + idx / kTileBlocks;
                    int const g = g0 + idx % kTileBlocks;
                    if (t >= tLo && t < tHi && g < gHi) {
                        logits[(seqRow0 + t - rowBegin) * numBlocks + g] = negMax;
                    }
                }
            }
            continue;
        }
        __syncthreads(); // previous iteration's readers of ks are done
        stageRows<kTileBlocks>(ks, kbar + (b * numBlocks + g0) * kDim, kDim, min(gHi, nVisMax) - g0);

        float acc[4][4];
#pragma unroll
        for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
            for (int jc = 0; jc < 4; ++jc) {
                acc[ir][jc] = 0.0f;
            }
        }
        for (int h = 0; h < kHeads; ++h) {
            __syncthreads();                        // previous head's readers of qs are done
            int const qValid = max(0, tVisHi - t0); // padded rows (t >= ctx) are never read
            int head = h;
            if (QSA_MUTANT(15)) {
                head = kHeads - 1 - h;
            }
            stageRows<kTileRows>(qs, qNormed + ((seqRow0 + t0) * kHeads + head) * kDim,
                                 static_cast<int64_t>(kHeads) * kDim, qValid);
            __syncthreads();

            float pend[4][4][4]; // pending tree values per (row, block) and level
            float p0[4][4];
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                // bit-reversed leaf order: l = rev4(j)
                int const l = ((j & 1) << 3) | ((j & 2) << 1) | ((j & 4) >> 1) | ((j & 8) >> 3);
                {
                    float4 qv[4], kv[4];
#pragma unroll
                    for (int ir = 0; ir < 4; ++ir) {
                        int const row = ty + 16 * ir;
                        qv[ir] = qs[swz(row, l)];
                    }
#pragma unroll
                    for (int jc = 0; jc < 4; ++jc) {
                        int const row = tx + 8 * jc;
                        kv[jc] = ks[swz(row, l)];
                    }
#pragma unroll
                    for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
                        for (int jc = 0; jc < 4; ++jc) {
                            p0[ir][jc] = k2LanePartial(qv[ir], kv[jc]);
                        }
                    }
                }
                {
                    float4 qv[4], kv[4];
#pragma unroll
                    for (int ir = 0; ir < 4; ++ir) {
                        int const row = ty + 16 * ir;
                        qv[ir] = qs[swz(row, l + 16)];
                    }
#pragma unroll
                    for (int jc = 0; jc < 4; ++jc) {
                        int const row = tx + 8 * jc;
                        kv[jc] = ks[swz(row, l + 16)];
                    }
#pragma unroll
                    for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
                        for (int jc = 0; jc < 4; ++jc) {
                            float const a = __fadd_rn(p0[ir][jc], k2LanePartial(qv[ir], kv[jc])); // a[l]
                            if (butterflyFold(pend[ir][jc], a, j)) {                              // pend[3] = dot_h
                                acc[ir][jc] = __fadd_rn(acc[ir][jc], reluPos(pend[ir][jc][3]));
                            }
                        }
                    }
                }
            }
        }

        float const scale = logitScale();
#pragma unroll
        for (int ir = 0; ir < 4; ++ir) {
            int const t = t0 + ty + 16 * ir;
            if (t < tLo || t >= tHi) {
                continue;
            }
            int nVis = t < ctx ? (t + 1) / 4 : 0;
            if (QSA_MUTANT(16) && t < ctx) {
                nVis = (t + 2) / 4;
            }
            int64_t const base = (seqRow0 + t - rowBegin) * numBlocks;
#pragma unroll
            for (int jc = 0; jc < 4; ++jc) {
                int const g = g0 + tx + 8 * jc;
                if (g >= gHi) {
                    continue;
                }
                if (g < nVis) {
                    logits[base + g] = __fmul_rn(acc[ir][jc], scale);
                    if (ids != nullptr) {
                        ids[base + g] = g;
                    }
                } else if (writeInvisible) {
                    logits[base + g] = negMax;
                }
            }
        }
    }
}

} // namespace

template <typename T>
void launchScoresImpl(char const* fn, float* logits, int32_t* ids, T const* qNormed, T const* kbar,
                      int32_t const* contextLengths, int32_t batchSize, int32_t seqLen, int64_t rowBegin,
                      int64_t rowEnd, bool writeInvisible, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    if (rowBegin == rowEnd) {
        return;
    }
    int64_t const numBlocks = ceilDiv(seqLen, 4);
    int64_t const tilesPerSeq = ceilDiv(seqLen, kTileRows);
    int64_t const bFirst = rowBegin / seqLen;
    int64_t const bLast = (rowEnd - 1) / seqLen;
    int64_t const tileStart = bFirst * tilesPerSeq + (rowBegin - bFirst * seqLen) / kTileRows;
    int64_t const tileEnd = bLast * tilesPerSeq + ceilDiv(rowEnd - bLast * seqLen, kTileRows);
    int64_t gTiles = ceilDiv(numBlocks, kTileBlocks);
    if (!writeInvisible) {
        // Only block tiles that some row of the call can see get a CTA (the others would exit at once):
        // row t sees blocks g < (t + 1) / 4 at most, and the latest t of the call is its last row when the
        // call lies within one sequence, else seqLen - 1.
        int64_t const tMax = bFirst == bLast ? rowEnd - 1 - bFirst * seqLen : seqLen - 1;
        gTiles = std::max<int64_t>(1, std::min(gTiles, ceilDiv((tMax + 1) / 4, kTileBlocks)));
    }
    int64_t const tiles = tileEnd - tileStart;
    if (tiles > 0x7FFFFFFF) {
        fail(fn, "too many rows in one call: ", rowEnd - rowBegin);
    }
    dim3 const grid(static_cast<unsigned>(tiles), static_cast<unsigned>(gTiles < kMaxGridY ? gTiles : kMaxGridY));
    scoresKernel<T><<<grid, kThreads, 0, stream>>>(
        logits, ids, qNormed, kbar, contextLengths, seqLen, static_cast<int32_t>(numBlocks), rowBegin, rowEnd,
        tileStart, static_cast<int32_t>(tilesPerSeq), static_cast<int32_t>(gTiles), writeInvisible);
    checkLaunch(fn);
}

template void launchScoresImpl<__half>(char const*, float*, int32_t*, __half const*, __half const*, int32_t const*,
                                       int32_t, int32_t, int64_t, int64_t, bool, cudaStream_t);
template void launchScoresImpl<__nv_bfloat16>(char const*, float*, int32_t*, __nv_bfloat16 const*, __nv_bfloat16 const*,
                                              int32_t const*, int32_t, int32_t, int64_t, int64_t, bool, cudaStream_t);

} // namespace qsa_detail

using namespace qsa_detail;

template <typename T>
void launchQsaScores(float* logits, T const* qNormed, T const* kbar, int32_t const* contextLengths, int32_t batchSize,
                     int32_t seqLen, int32_t rowBegin, int32_t rowEnd, cudaStream_t stream) {
    char const* fn = "launchQsaScores";
    requirePtr(fn, "logits", logits);
    requirePtr(fn, "qNormed", qNormed);
    requirePtr(fn, "kbar", kbar);
    requirePtr(fn, "contextLengths", contextLengths);
    checkRowRange(fn, batchSize, seqLen, rowBegin, rowEnd);
    launchScoresImpl<T>(fn, logits, nullptr, qNormed, kbar, contextLengths, batchSize, seqLen, rowBegin, rowEnd, true,
                        stream);
}

template void launchQsaScores<__half>(float*, __half const*, __half const*, int32_t const*, int32_t, int32_t, int32_t,
                                      int32_t, cudaStream_t);
template void launchQsaScores<__nv_bfloat16>(float*, __nv_bfloat16 const*, __nv_bfloat16 const*, int32_t const*,
                                             int32_t, int32_t, int32_t, int32_t, cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

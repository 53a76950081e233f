// K2 scores (contract section 4): logit(r, g) for the visible entries, -FLT_MAX elsewhere.
//
// Register-tiled: a CTA of 128 threads owns 64 rows x 64 blocks of one sequence, as two sub-tiles of 32
// blocks that share one staged q head; in a sub-tile each thread computes 4 rows x 4 blocks. The contract's
// per-lane order is kept exactly inside one thread: for every (row, block, head), partial[l] = fma chain
// over i = 0..3 of q[l + 32i] * k[l + 32i] starting at +0.0, and the butterfly warpSum is evaluated as the
// tree it equals: a[l] = p[l] + p[l+16], then b[l] = a[l] + a[l+8], c[l] = b[l] + b[l+4], d[l] = c[l] + c[l+2],
// e = d[0] + d[1] (float addition is commutative, so lane l's p[l] + p[l^m] and lane l^m's p[l^m] + p[l]
// are the same bits). The leaves a[l] are visited in bit-reversed order j -> l = rev4(j), so the tree
// folds like a binary counter: leaves j = 0..7 (the even l) fold into d[0], j = 8..15 (the odd l) into
// d[1]. The head loop keeps those 8 leaves in one rolled iteration (twice per head: about 24 KB of loop
// instead of about 49 KB fully unrolled, and 164 registers, so 3 CTAs fit per SM instead of 2). Heads then
// add in order ((relu0 + relu1) + relu2) + relu3 (starting from +0.0 changes no bit since every relu is
// >= +0.0), times 0x3DB504F3. Nsight Compute figures before and after: kernels/PERFORMANCE.md.
//
// Shared memory holds q (one head at a time) and kbar as floats: row `row`, lane l's dims (l, l + 32,
// l + 64, l + 96) as the float4 at slot(row, l) = row * 33 + P(l), P(l) = ((l & 3) << 3) | (l >> 2).
// The row stride of 33 slots puts a warp's 4 q rows and 8 k rows at one l in distinct banks with
// compile-time offsets; P makes the staging stores conflict free (a thread stages lanes 4m .. 4m + 3 of a
// row from 8-byte loads, and P(4m + c) = 8c + m puts the 8 threads of a store phase on 8 consecutive slots).
#include <algorithm>
#include <cfloat>

#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"
#include "kernels/qsaTestHooks.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kTileRows = 64;                       // rows per CTA
constexpr int kSubBlocks = 32;                      // blocks per register sub-tile
constexpr int kSubTiles = 2;                        // sub-tiles per staged q head
constexpr int kTileBlocks = kSubBlocks * kSubTiles; // blocks per CTA
constexpr int kThreads = 128;
constexpr int kPad = 33;   // float4 slots per staged row
constexpr int kLeaves = 8; // leaves per rolled iteration: one of d[0], d[1]
// Shared memory of a CTA of `span` blocks: 67,584 B at span 64 (dynamic: over 48 KB), 50,688 B at 32.
constexpr int smemFor(int span) {
    return (kTileRows + span) * kPad * 16;
}

__device__ __forceinline__ int permLane(int l) {
    return ((l & 3) << 3) | (l >> 2);
}

// Stage rows [0, kRows) of a 128-wide T matrix into slot(row, l); rows >= nValid read as +0.0 (padded q
// rows and invisible blocks are never read). Item (row, m) covers lanes 4m .. 4m + 3, i.e. dims 4m + c + 32i.
// Every load of the stage is issued before the first conversion (one L2 round trip per stage). vec8 (both base
// pointers 8-byte aligned, as the runner's workspace always is): the item's 4 dims of each i come from one
// 8-byte load, else from 2-byte loads (a public-launcher caller may pass 2-byte aligned pointers).
template <int kRows, typename T>
__device__ __forceinline__ void stageRows(float4* dst, T const* src, int64_t srcStride, int nValid, bool vec8) {
    constexpr int kIters = kRows * 8 / kThreads;
    static_assert(kRows * 8 % kThreads == 0, "whole iterations");
    uint2 bits[kIters][4]; // [it][i]: dims 4m .. 4m + 3 of 32i, 16 bits each
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        int const idx = static_cast<int>(threadIdx.x) + it * kThreads;
        int const row = idx >> 3;
        int const m = idx & 7;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            bits[it][i] = make_uint2(0u, 0u); // +0.0
        }
        if (row < nValid) {
            T const* p = src + row * srcStride + 4 * m;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                if (vec8) {
                    bits[it][i] = *reinterpret_cast<uint2 const*>(p + 32 * i);
                } else {
                    uint16_t const* h = reinterpret_cast<uint16_t const*>(p + 32 * i);
                    bits[it][i] = make_uint2(h[0] | (uint32_t{h[1]} << 16), h[2] | (uint32_t{h[3]} << 16));
                    if (QSA_MUTANT(37)) { // the group's middle two elements trade places
                        bits[it][i] = make_uint2(h[0] | (uint32_t{h[2]} << 16), h[1] | (uint32_t{h[3]} << 16));
                    }
                }
            }
        }
    }
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        int const idx = static_cast<int>(threadIdx.x) + it * kThreads;
        int const row = idx >> 3;
        int const m = idx & 7;
        float v[4][4]; // [c][i]: dim 4m + c + 32i
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[0][i] = bitsToFloat<T>(static_cast<uint16_t>(bits[it][i].x));
            v[1][i] = bitsToFloat<T>(static_cast<uint16_t>(bits[it][i].x >> 16));
            v[2][i] = bitsToFloat<T>(static_cast<uint16_t>(bits[it][i].y));
            v[3][i] = bitsToFloat<T>(static_cast<uint16_t>(bits[it][i].y >> 16));
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            dst[row * kPad + 8 * c + m] = make_float4(v[c][0], v[c][1], v[c][2], v[c][3]); // slot(row, 4m + c)
        }
    }
}

__device__ __forceinline__ float k2LanePartial(float4 q, float4 k) {
    float p = lanePartial(q, k);
    if (QSA_MUTANT(14)) {
        p = lanePartial(q, k, /*reversed=*/true);
    }
    return p;
}

// One rolled iteration: the 8 leaves j = 8 it + jj (l = rev4(jj) + it) of the 4 x 4 (row, block) pairs of
// this thread, folded into d[it] (returned in v). qRow / kRow: slot(row, 0) of the thread's first q row and
// first k row; rows ty + 16 ir and tx + 8 jc are at compile-time offsets from them.
__device__ __forceinline__ void foldEightLeaves(float4 const* qRow, float4 const* kRow, int it, float (&v)[4][4]) {
    float pend[4][4][4]; // butterflyFold's binary counter per pair; leaves j < 8 leave the m = 2 node d[it] in pend[3]
    float4 const* q = qRow + 8 * it; // P(rev4(jj) + it) = P(rev4(jj)) + 8 it (rev4(jj) is even)
    float4 const* k = kRow + 8 * it;
#pragma unroll
    for (int jj = 0; jj < kLeaves; ++jj) {
        int const p = permLane(rev4(jj)); // P(l); P(l + 16) = P(l) + 4
        float p0[4][4];                   // partial[l]
        {
            float4 qv[4], kv[4];
#pragma unroll
            for (int ir = 0; ir < 4; ++ir) {
                qv[ir] = q[16 * ir * kPad + p];
            }
#pragma unroll
            for (int jc = 0; jc < 4; ++jc) {
                kv[jc] = k[8 * jc * kPad + p];
            }
#pragma unroll
            for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
                for (int jc = 0; jc < 4; ++jc) {
                    p0[ir][jc] = k2LanePartial(qv[ir], kv[jc]);
                }
            }
        }
        float4 qv[4], kv[4];
#pragma unroll
        for (int ir = 0; ir < 4; ++ir) {
            qv[ir] = q[16 * ir * kPad + p + 4];
        }
#pragma unroll
        for (int jc = 0; jc < 4; ++jc) {
            kv[jc] = k[8 * jc * kPad + p + 4];
        }
#pragma unroll
        for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
            for (int jc = 0; jc < 4; ++jc) {
                float const a = __fadd_rn(p0[ir][jc], k2LanePartial(qv[ir], kv[jc])); // a[l] = p[l] + p[l + 16]
                butterflyFold(pend[ir][jc], a, jj);
            }
        }
    }
#pragma unroll
    for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
        for (int jc = 0; jc < 4; ++jc) {
            v[ir][jc] = pend[ir][jc][3]; // after jj = 7 (bit 3 clear): d[it]
        }
    }
}

// span: blocks per CTA, kSubBlocks * kSubTiles, or kSubBlocks where the device cannot give the larger shared
// memory (sm_75 gives 64 KB).
template <typename T>
__global__ void __launch_bounds__(kThreads, 3)
    scoresKernel(float* logits, T const* qNormed, T const* kbar, int32_t const* contextLengths, int32_t seqLen,
                 int32_t numBlocks, int64_t rowBegin, int64_t rowEnd, int64_t tileStart, int32_t tilesPerSeq,
                 int32_t gTiles, int32_t span, bool vec8, bool writeInvisible) {
    extern __shared__ float4 smem[];
    float4* const qs = smem;                    // kTileRows staged rows
    float4* const ks = smem + kTileRows * kPad; // span staged rows

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

    int const tx = threadIdx.x & 7;  // blocks g0 + 32 sub + tx + 8 jc
    int const ty = threadIdx.x >> 3; // rows t0 + ty + 16 ir
    float const negMax = -FLT_MAX;

    for (int gy = blockIdx.y; gy < gTiles; gy += gridDim.y) {
        int const g0 = gy * span;
        int const gHi = min(g0 + span, numBlocks);
        if (g0 >= nVisMax) {
            // Whole tile invisible: reads nothing.
            if (writeInvisible) {
                for (int idx = threadIdx.x; idx < kTileRows * span; idx += kThreads) {
                    int const t = t0 + idx / span;
                    int const g = g0 + idx % span;
                    if (t >= tLo && t < tHi && g < gHi) {
                        logits[(seqRow0 + t - rowBegin) * numBlocks + g] = negMax;
                    }
                }
            }
            continue;
        }
        int const nK = min(gHi, nVisMax) - g0; // blocks some row of the tile can see
        int const subTiles = (nK + kSubBlocks - 1) / kSubBlocks;
        __syncthreads(); // previous iteration's readers of ks are done
        if (span == kTileBlocks) {
            stageRows<kTileBlocks>(ks, kbar + (b * numBlocks + g0) * kDim, kDim, nK, vec8);
        } else {
            stageRows<kSubBlocks>(ks, kbar + (b * numBlocks + g0) * kDim, kDim, nK, vec8);
        }

        float acc[kSubTiles][4][4];
#pragma unroll
        for (int sub = 0; sub < kSubTiles; ++sub) {
#pragma unroll
            for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
                for (int jc = 0; jc < 4; ++jc) {
                    acc[sub][ir][jc] = 0.0f;
                }
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
                                 static_cast<int64_t>(kHeads) * kDim, qValid, vec8);
            __syncthreads();
#pragma unroll 1
            for (int sub = 0; sub < subTiles; ++sub) {
                float4 const* qRow = qs + ty * kPad;
                float4 const* kRow = ks + (sub * kSubBlocks + tx) * kPad;
                float d0[4][4]; // d[0] of every pair, held while the odd leaves fold into d[1]
#pragma unroll 1
                for (int it = 0; it < 2; ++it) {
                    float v[4][4];
                    foldEightLeaves(qRow, kRow, it, v);
                    if (it == 0) {
#pragma unroll
                        for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
                            for (int jc = 0; jc < 4; ++jc) {
                                d0[ir][jc] = v[ir][jc];
                            }
                        }
                    } else {
#pragma unroll
                        for (int s = 0; s < kSubTiles; ++s) {
                            if (s == sub) { // compile-time register indices
#pragma unroll
                                for (int ir = 0; ir < 4; ++ir) {
#pragma unroll
                                    for (int jc = 0; jc < 4; ++jc) {
                                        float const dot = __fadd_rn(d0[ir][jc], v[ir][jc]); // e = d[0] + d[1]
                                        acc[s][ir][jc] = __fadd_rn(acc[s][ir][jc], reluPos(dot));
                                    }
                                }
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
            for (int sub = 0; sub < kSubTiles; ++sub) {
#pragma unroll
                for (int jc = 0; jc < 4; ++jc) {
                    int const g = g0 + sub * kSubBlocks + tx + 8 * jc;
                    if (g >= gHi) {
                        continue; // also every g of sub-tile 1 when span == kSubBlocks
                    }
                    if (g < nVis) {
                        logits[base + g] = __fmul_rn(acc[sub][ir][jc], scale);
                    } else if (writeInvisible) {
                        logits[base + g] = negMax;
                    }
                }
            }
        }
    }
}

// Blocks per CTA on the current device: kTileBlocks when it gives a block that much shared memory, else kSubBlocks.
int scoresSpan(char const* fn) {
    int device = 0;
    int optin = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) {
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    }
    if (e != cudaSuccess) {
        fail(fn, "cannot read the device's shared memory per block: ", cudaGetErrorString(e));
    }
    bool const narrow = qsa_test::narrowScoresTilesFlag().load(std::memory_order_relaxed) != 0; // tests only
    return optin >= smemFor(kTileBlocks) && !narrow ? kTileBlocks : kSubBlocks;
}

} // namespace

template <typename T>
void launchScoresImpl(char const* fn, float* logits, T const* qNormed, T const* kbar, int32_t const* contextLengths,
                      int32_t batchSize, int32_t seqLen, int64_t rowBegin, int64_t rowEnd, bool writeInvisible,
                      cudaStream_t stream) {
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
    int const span = scoresSpan(fn);
    int const smemBytes = smemFor(span);
    int gridSpan = span; // blocks per CTA, as the grid counts them
    if (QSA_MUTANT(38)) {
        gridSpan = kTileBlocks;
    }
    int64_t gTiles = ceilDiv(numBlocks, gridSpan);
    if (!writeInvisible) {
        // Only block tiles that some row of the call can see get a CTA (the others would exit at once):
        // row t sees blocks g < (t + 1) / 4 at most, and the latest t of the call is its last row when the
        // call lies within one sequence, else seqLen - 1.
        int64_t const tMax = bFirst == bLast ? rowEnd - 1 - bFirst * seqLen : seqLen - 1;
        gTiles = std::max<int64_t>(1, std::min(gTiles, ceilDiv((tMax + 1) / 4, gridSpan)));
    }
    int64_t const tiles = tileEnd - tileStart;
    if (tiles > 0x7FFFFFFF) {
        fail(fn, "too many rows in one call: ", rowEnd - rowBegin);
    }
    dim3 const grid(static_cast<unsigned>(tiles), static_cast<unsigned>(gTiles < kMaxGridY ? gTiles : kMaxGridY));
    bool const vec8 = reinterpret_cast<uintptr_t>(qNormed) % 8 == 0 && reinterpret_cast<uintptr_t>(kbar) % 8 == 0;
    // Per launch, not once: the attribute belongs to the current device.
    cudaError_t const e = cudaFuncSetAttribute(scoresKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes);
    if (e != cudaSuccess) {
        fail(fn, "cannot give K2 its ", smemBytes, " bytes of shared memory: ", cudaGetErrorString(e));
    }
    scoresKernel<T><<<grid, kThreads, smemBytes, stream>>>(
        logits, qNormed, kbar, contextLengths, seqLen, static_cast<int32_t>(numBlocks), rowBegin, rowEnd, tileStart,
        static_cast<int32_t>(tilesPerSeq), static_cast<int32_t>(gTiles), span, vec8, writeInvisible);
    checkLaunch(fn);
}

template void launchScoresImpl<__half>(char const*, float*, __half const*, __half const*, int32_t const*, int32_t,
                                       int32_t, int64_t, int64_t, bool, cudaStream_t);
template void launchScoresImpl<__nv_bfloat16>(char const*, float*, __nv_bfloat16 const*, __nv_bfloat16 const*,
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
    launchScoresImpl<T>(fn, logits, qNormed, kbar, contextLengths, batchSize, seqLen, rowBegin, rowEnd, true, stream);
}

template void launchQsaScores<__half>(float*, __half const*, __half const*, int32_t const*, int32_t, int32_t, int32_t,
                                      int32_t, cudaStream_t);
template void launchQsaScores<__nv_bfloat16>(float*, __nv_bfloat16 const*, __nv_bfloat16 const*, int32_t const*,
                                             int32_t, int32_t, int32_t, int32_t, cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

// Prefill selection + K4 in one pass per row (runner only; contract sections 4-5).
//
// One CTA per row of a chunk: (1) the first kSel = min(512, nVis) entries of (logit descending, id
// ascending) among the row's visible prefix, by the block-wide radix select of qsaRadixSelect.cuh (the
// same set as B3; when nVis <= 512 every visible entry is taken and no pass runs); (2) the kSel winners
// ordered by a bitonic sort of the 64-bit key (u << 32) | (0xFFFFFFFF - id), descending, u = radixKey(logit),
// held in registers (shuffles within a warp, shared memory across warps); (3) K4 written from that order.
//
// Why this equals the contract's CUB whole-row pipeline: visible logits are >= +0.0, never NaN or -0.0
// (contract section 4), so they sort after no invisible -FLT_MAX entry, and on them ascending u is
// ascending float with equal u iff equal float. The 64-bit keys are distinct (ids are), so the bitonic
// sort, which is not stable, still has exactly one result: logit descending, equal logits by ascending
// id, which is the stable descending CUB order with values = ascending ids. K4 reads only the first kSel
// entries of that order, which are exactly the selected set.
#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"
#include "kernels/qsaRadixSelect.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

// Threads per row and keys per thread in registers, chosen per launch by MB (rows with more visible blocks
// than kThreads * kItems re-read their keys every pass): few registers for short rows (more rows in flight),
// more threads for long ones (a shorter per-row critical path).

// Descending order of this key = (logit descending, id ascending).
__device__ __forceinline__ unsigned long long orderKey(uint32_t u, int g) {
    unsigned long long key = (static_cast<unsigned long long>(u) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(g));
    if (QSA_MUTANT(21)) {
        key = (static_cast<unsigned long long>(u) << 32) | static_cast<uint32_t>(g); // equal logits by descending id
    }
    return key;
}

__device__ __forceinline__ int orderKeyId(unsigned long long key) {
    uint32_t const lo = static_cast<uint32_t>(key);
    int id = static_cast<int>(0xFFFFFFFFu - lo);
    if (QSA_MUTANT(21)) {
        id = static_cast<int>(lo);
    }
    return id;
}

// Bitonic sort of the kSel keys slots[0, kSel) into descending order; sorted position p ends in v[e] of
// thread p % kThreads (e = p / kThreads). The network is that of n = max(32, pow2 >= kSel) keys; the
// positions from kSel on hold 0 (below every real key: its low word 0xFFFFFFFF - id is > 0), so they sort
// last, and those >= n (all 0) never move. Partners closer than 32 are in the same warp (shuffles), closer
// than kThreads in another warp (one shared-memory exchange and one barrier per stage, in the halves of
// slots[2 * kTopK] by turns, so a stage's writes never meet the previous exchange's reads), else in the
// same thread. The keys are distinct (ids are), so any correct sorting network gives this one result.
template <int kThreads>
struct SortedKeys {
    static constexpr int kPer = kTopK / kThreads; // positions per thread
    unsigned long long v[kPer];
    int spare; // the half of slots no thread reads any more when the sort returns
};

template <int kThreads>
__device__ __forceinline__ SortedKeys<kThreads> bitonicSortDesc(unsigned long long* slots, int kSel) {
    constexpr int kPer = SortedKeys<kThreads>::kPer;
    static_assert(kPer == 1 || kPer == 2, "256 or 512 threads");
    SortedKeys<kThreads> s;
    int const tid = static_cast<int>(threadIdx.x);
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
        int const p = e * kThreads + tid;
        s.v[e] = p < kSel ? slots[p] : 0ull;
    }
    int n = 32;
    while (n < kSel) {
        n <<= 1;
    }
    int lastRead = 0; // the half other threads may still read
    for (int k = 2; k <= n; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            unsigned long long w[kPer];
            if (j >= kThreads) { // partner in this thread (kPer == 2, j == kThreads)
#pragma unroll
                for (int e = 0; e < kPer; ++e) {
                    w[e] = s.v[kPer - 1 - e];
                }
            } else if (j >= 32) { // partner in another warp of the CTA
                unsigned long long* buf = slots + (lastRead ^ 1) * kTopK;
#pragma unroll
                for (int e = 0; e < kPer; ++e) {
                    buf[e * kThreads + tid] = s.v[e];
                }
                __syncthreads();
#pragma unroll
                for (int e = 0; e < kPer; ++e) {
                    w[e] = buf[(e * kThreads + tid) ^ j];
                }
                lastRead ^= 1;
            } else { // partner in this warp
#pragma unroll
                for (int e = 0; e < kPer; ++e) {
                    w[e] = __shfl_xor_sync(kFull, s.v[e], j);
                }
            }
#pragma unroll
            for (int e = 0; e < kPer; ++e) {
                int const p = e * kThreads + tid;
                // The lower index of a pair keeps the larger key in a descending run ((p & k) == 0; the last
                // merge, k == n, is descending everywhere), the smaller one in an ascending run.
                bool const keepMax = ((p & j) == 0) == ((p & k) == 0);
                unsigned long long const hi = s.v[e] > w[e] ? s.v[e] : w[e];
                unsigned long long const lo = s.v[e] > w[e] ? w[e] : s.v[e];
                s.v[e] = keepMax ? hi : lo;
            }
        }
    }
    s.spare = lastRead ^ 1;
    return s;
}

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
    prefillSelectExpandKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t seqLen,
                              int32_t numBlocks, int64_t rowBegin, int64_t rowEnd) {
    __shared__ RadixSelectSmem<kThreads> sm;
    __shared__ unsigned long long slots[2 * kTopK]; // the winners' keys at [0, kSel), then the sort's halves
    int const* sortedIds = nullptr; // this row's ids in the contract's order (valid when kSel > 0)
    for (int64_t r = rowBegin + blockIdx.x; r < rowEnd; r += gridDim.x) {
        int64_t const b = r / seqLen;
        int const t = static_cast<int>(r - b * seqLen);
        int const ctx = clampCtx(contextLengths[b], seqLen);
        bool const padded = t >= ctx;
        if (QSA_MUTANT(23) && padded) {
            continue; // K4 mutant: padded rows keep whatever outIdx held
        }
        int const nVis = padded ? 0 : (t + 1) / 4;
        int const kSel = min(kTopK, nVis);
        int tail = padded ? 0 : (t + 1) % 4;
        if (QSA_MUTANT(22) && !padded) {
            tail = t % 4;
        }
        if (kSel > 0) { // uniform over the block
            int64_t const base = (r - rowBegin) * numBlocks;
            float const* row = logits + base;
            int const chunk = (nVis + kThreads - 1) / kThreads;
            int const gBegin = min(nVis, static_cast<int>(threadIdx.x) * chunk);
            int const gEnd = min(nVis, gBegin + chunk);
            auto emit = [&](int pos, int g, uint32_t u) { slots[pos] = orderKey(u, g); };
            // radixSelectEmit begins with a barrier: the previous row's readers of slots are done.
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
            __syncthreads(); // every winner is in slots
            SortedKeys<kThreads> const sorted = bitonicSortDesc<kThreads>(slots, kSel);
            int* ids = reinterpret_cast<int*>(slots + sorted.spare * kTopK);
#pragma unroll
            for (int e = 0; e < SortedKeys<kThreads>::kPer; ++e) {
                int const p = e * kThreads + static_cast<int>(threadIdx.x);
                if (p < kSel) {
                    ids[p] = orderKeyId(sorted.v[e]);
                }
            }
            __syncthreads();
            sortedIds = ids;
        }
        int32_t* out = outIdx + r * kWidth;
        for (int p = threadIdx.x; p < kWidth; p += kThreads) {
            int32_t v = -1;
            if (p < 4 * kSel) {
                v = sortedIds[p >> 2] * 4 + (p & 3);
            } else if (p < 4 * kSel + tail) {
                v = 4 * nVis + (p - 4 * kSel);
            }
            out[p] = v;
        }
    }
}

} // namespace

void launchPrefillSelectExpand(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t seqLen,
                               int64_t rowBegin, int64_t rowEnd, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    if (rowBegin == rowEnd) {
        return;
    }
    int const grid = gridFor(rowEnd - rowBegin, 1);
    int32_t const numBlocks = static_cast<int32_t>(ceilDiv(seqLen, 4)); // MB >= every row's nVis
    if (numBlocks <= 256 * 4) {
        prefillSelectExpandKernel<256, 4>
            <<<grid, 256, 0, stream>>>(outIdx, logits, contextLengths, seqLen, numBlocks, rowBegin, rowEnd);
    } else if (numBlocks <= 256 * 8) {
        prefillSelectExpandKernel<256, 8>
            <<<grid, 256, 0, stream>>>(outIdx, logits, contextLengths, seqLen, numBlocks, rowBegin, rowEnd);
    } else {
        prefillSelectExpandKernel<512, 16>
            <<<grid, 512, 0, stream>>>(outIdx, logits, contextLengths, seqLen, numBlocks, rowBegin, rowEnd);
    }
    checkLaunch("runQsaIndexerPrefill");
}

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

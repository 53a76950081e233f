// Prefill selection + K4 in one pass per row (runner only; contract sections 4-5).
//
// One CTA per row of a chunk: (1) the first kSel = min(512, nVis) entries of (logit descending, id
// ascending) among the row's visible prefix, by the block-wide radix select of qsaRadixSelect.cuh (the
// same set as B3; when nVis <= 512 every visible entry is taken and no pass runs); (2) the kSel winners
// ordered by a bitonic sort of the 64-bit key (u << 32) | (0xFFFFFFFF - id), descending, u = radixKey(logit),
// in shared memory, three stages per barrier in registers; (3) K4 written directly from that order.
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

// Slot of sorted position i in shared memory. The sort's rounds read 2^M positions spaced j apart per
// thread; with 8-byte keys at slot i the warp's reads would hit 2 of the 32 banks when j < 16. Flipping
// the low 4 bits by bits 4-7 spreads every round's pattern over all banks (2 wavefronts per warp access,
// the minimum for 32 x 8 bytes); it is a bijection on each 256-slot range.
__device__ __forceinline__ int sortSlot(int i) {
    return i ^ ((i >> 4) & 15);
}

// One round of the bitonic network for merge size k: the kM consecutive stages j = jTop, jTop / 2, ...,
// jTop >> (kM - 1) on groups of 2^kM positions base + c * jLow (c < 2^kM), each group in one thread's
// registers: one shared-memory read and write per key and one barrier for kM stages (a stage per barrier
// read and wrote every key once per stage). Within a group the bit k of every position is the same, so the
// direction is one for the group: descending where (position & k) == 0 (all of the last merge, k == n).
template <int kM>
__device__ __forceinline__ void bitonicRound(unsigned long long* slots, int n, int k, int jTop) {
    constexpr int kG = 1 << kM;
    int const jLow = jTop >> (kM - 1);
    int const lowBits = __ffs(jLow) - 1; // log2(jLow)
    for (int g = static_cast<int>(threadIdx.x); g < (n >> kM); g += static_cast<int>(blockDim.x)) {
        int const base = ((g >> lowBits) << (lowBits + kM)) | (g & (jLow - 1));
        unsigned long long x[kG];
#pragma unroll
        for (int c = 0; c < kG; ++c) {
            x[c] = slots[sortSlot(base + c * jLow)];
        }
        bool const desc = (base & k) == 0;
#pragma unroll
        for (int m = kM - 1; m >= 0; --m) {
#pragma unroll
            for (int c = 0; c < kG; ++c) {
                if ((c & (1 << m)) == 0) {
                    unsigned long long const a = x[c];
                    unsigned long long const b = x[c | (1 << m)];
                    bool const swap = (a < b) == desc; // the lower position keeps the larger key if desc
                    x[c] = swap ? b : a;
                    x[c | (1 << m)] = swap ? a : b;
                }
            }
        }
#pragma unroll
        for (int c = 0; c < kG; ++c) {
            slots[sortSlot(base + c * jLow)] = x[c];
        }
    }
    __syncthreads();
}

// Sorts slots (at sortSlot positions) [0, n) into descending order, n a power of two >= 8; every thread
// of the block calls it after a barrier that follows the last write of a key. Stages are taken from each
// merge's top three at a time.
__device__ __forceinline__ void bitonicSortDesc(unsigned long long* slots, int n) {
    for (int k = 2; k <= n; k <<= 1) {
        int j = k >> 1;
        while (j > 0) {
            if (j >= 4) {
                bitonicRound<3>(slots, n, k, j);
                j >>= 3;
            } else if (j == 2) {
                bitonicRound<2>(slots, n, k, j);
                j >>= 2;
            } else {
                bitonicRound<1>(slots, n, k, j);
                j >>= 1;
            }
        }
    }
}

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads, kThreads == 256 ? 5 : 2)
    prefillSelectExpandKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t seqLen,
                              int32_t numBlocks, int64_t rowBegin, int64_t rowEnd) {
    __shared__ RadixSelectSmem<kThreads> sm;
    __shared__ unsigned long long slots[kTopK]; // the winners' keys, at sortSlot(rank)
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
            auto emit = [&](int pos, int g, uint32_t u) { slots[sortSlot(pos)] = orderKey(u, g); };
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
            int n = 8;
            while (n < kSel) {
                n <<= 1;
            }
            for (int i = kSel + static_cast<int>(threadIdx.x); i < n; i += kThreads) {
                slots[sortSlot(i)] = 0ull; // below every real key (its low word 0xFFFFFFFF - id is > 0): sorts last
            }
            __syncthreads();
            bitonicSortDesc(slots, n);
        }
        int32_t* out = outIdx + r * kWidth;
        for (int p = threadIdx.x; p < kWidth; p += kThreads) {
            int32_t v = -1;
            if (p < 4 * kSel) {
                v = orderKeyId(slots[sortSlot(p >> 2)]) * 4 + (p & 3);
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

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

// Who sorts a row: the CTA (one row per CTA) or one warp (one row per warp). rank / size / sync of the team.
struct CtaTeam {
    __device__ static int rank() { return static_cast<int>(threadIdx.x); }
    __device__ static int size() { return static_cast<int>(blockDim.x); }
    __device__ static void sync() { __syncthreads(); }
};
struct WarpTeam {
    __device__ static int rank() { return static_cast<int>(threadIdx.x & 31); }
    __device__ static int size() { return 32; }
    __device__ static void sync() { __syncwarp(); }
};

// One round of the bitonic network for merge size k: the kM consecutive stages j = jTop, jTop / 2, ...,
// jTop >> (kM - 1) on groups of 2^kM positions base + c * jLow (c < 2^kM), each group in one thread's
// registers: one shared-memory read and write per key and one barrier for kM stages (a stage per barrier
// read and wrote every key once per stage). Within a group the bit k of every position is the same, so the
// direction is one for the group: descending where (position & k) == 0 (all of the last merge, k == n).
template <int kM, typename Team>
__device__ __forceinline__ void bitonicRound(unsigned long long* slots, int n, int k, int jTop) {
    constexpr int kG = 1 << kM;
    int const jLow = jTop >> (kM - 1);
    int const lowBits = __ffs(jLow) - 1; // log2(jLow)
    for (int g = Team::rank(); g < (n >> kM); g += Team::size()) {
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
    Team::sync();
}

// Sorts slots (at sortSlot positions) [0, n) into descending order, n a power of two >= 8; every thread
// of the team calls it after a team sync that follows the last write of a key. Stages are taken from each
// merge's top three at a time.
template <typename Team>
__device__ __forceinline__ void bitonicSortDesc(unsigned long long* slots, int n) {
    for (int k = 2; k <= n; k <<= 1) {
        int j = k >> 1;
        while (j > 0) {
            if (j >= 4) {
                bitonicRound<3, Team>(slots, n, k, j);
                j >>= 3;
            } else if (j == 2) {
                bitonicRound<2, Team>(slots, n, k, j);
                j >>= 2;
            } else {
                bitonicRound<1, Team>(slots, n, k, j);
                j >>= 1;
            }
        }
    }
}

// K4 of one row from its sorted winners (winners w = first, first + stride, ...): winner w's block gives the 4
// tokens of entries 4w .. 4w + 3 (one shared-memory read per winner, not per entry), then the causal tail
// 4 nVis + j (j < tail), then -1 (contract section 4, K4).
__device__ __forceinline__ void expandFromSlots(int32_t* out, unsigned long long const* slots, int kSel, int nVis,
                                                int tail, int first, int stride) {
    for (int w = first; w < kSel; w += stride) {
        int32_t const token = orderKeyId(slots[sortSlot(w)]) * 4;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            out[4 * w + c] = token + c;
        }
    }
    for (int p = 4 * kSel + first; p < kWidth; p += stride) {
        out[p] = p < 4 * kSel + tail ? 4 * nVis + (p - 4 * kSel) : -1;
    }
}

// One prefill row's geometry (contract section 4): the query at position t of its sequence sees the whole
// blocks before it, nVis = (t + 1) / 4, of which kSel = min(512, nVis) are selected, plus the tail (t + 1) % 4
// tokens of its own partial block; a padded row (t >= ctx) sees nothing and is all -1.
struct PrefillRow {
    bool padded;
    int nVis, kSel, tail;
};

__device__ __forceinline__ PrefillRow prefillRow(int64_t r, int32_t seqLen, int32_t const* contextLengths) {
    int64_t const b = r / seqLen;
    int const t = static_cast<int>(r - b * seqLen);
    bool const padded = t >= clampCtx(contextLengths[b], seqLen);
    int const nVis = padded ? 0 : (t + 1) / 4;
    int tail = padded ? 0 : (t + 1) % 4;
    if (QSA_MUTANT(22) && !padded) {
        tail = t % 4;
    }
    return PrefillRow{padded, nVis, min(kTopK, nVis), tail};
}

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads, kThreads == 256 ? 5 : 2)
    prefillSelectExpandKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t seqLen,
                              int32_t numBlocks, int64_t rowBegin, int64_t rowEnd) {
    __shared__ RadixSelectSmem<kThreads> sm;
    __shared__ unsigned long long slots[kTopK]; // the winners' keys, at sortSlot(rank)
    for (int64_t r = rowBegin + blockIdx.x; r < rowEnd; r += gridDim.x) {
        PrefillRow const geo = prefillRow(r, seqLen, contextLengths);
        if (QSA_MUTANT(23) && geo.padded) {
            continue; // K4 mutant: padded rows keep whatever outIdx held
        }
        int const nVis = geo.nVis, kSel = geo.kSel, tail = geo.tail;
        if (kSel > 0) { // uniform over the block
            int64_t const base = (r - rowBegin) * numBlocks;
            auto emit = [&](int pos, int g, uint32_t u) { slots[sortSlot(pos)] = orderKey(u, g); };
            // radixSelectEmit begins with a barrier: the previous row's readers of slots are done.
            radixSelectRowEmit<kThreads, kItems>(sm, logits + base, nVis, kTopK, emit);
            int n = 8;
            while (n < kSel) {
                n <<= 1;
            }
            for (int i = kSel + static_cast<int>(threadIdx.x); i < n; i += kThreads) {
                slots[sortSlot(i)] = 0ull; // below every real key (its low word 0xFFFFFFFF - id is > 0): sorts last
            }
            __syncthreads();
            bitonicSortDesc<CtaTeam>(slots, n);
        }
        expandFromSlots(outIdx + r * kWidth, slots, kSel, nVis, tail, static_cast<int>(threadIdx.x), kThreads);
    }
}

// ---- One warp per row (MB <= 32 * kItems; issue 24: no block barrier in a row's critical path) -------------
//
// Lane l holds the keys of ids l, l + 32, ..., l + 32 (kItems - 1) in registers, so that for every k the
// warp's 32 ids are consecutive and a ballot's lower lanes are the lower ids: ranks in id order are popcounts.
// The radix passes are those of qsaRadixSelect.cuh (same digits, same threshold rule, same early stop), on one
// per-warp histogram; the winners are sorted by the warp with the same bitonic network. Same set, same order,
// same K4 as the CTA kernel above, bit for bit (testing/simt runs both against the reference in CI).

constexpr int kRowsPerCta = 4; // warps per CTA, one row each

// The histogram slot of digit d. Lane l reads the 8 digits from the top 255 - 8l .. 255 - 8l - 7 (t = 255 - d in
// [8l, 8l + 8)); one padding int per 8 spreads those reads over all 32 banks (9l + j is a bijection mod 32).
__device__ __forceinline__ int histSlot(uint32_t d) {
    int const t = 255 - static_cast<int>(d);
    return t + (t >> 3);
}

struct WarpRowSmem {
    int hist[256 + 32];
    unsigned long long slots[kTopK]; // the winners' keys, at sortSlot(position)
};

// One pass over the bucket (u & mask) == prefix at digit (u >> shift) & 255: the digit d where the count from
// the top reaches need becomes part of the prefix; need drops by the count above d; eq = the count of d. On
// entry and on return the histogram is zero.
template <int kItems>
__device__ __forceinline__ void warpRadixPass(int* hist, uint32_t const (&u)[kItems], int nVis, int shift,
                                              uint32_t& prefix, uint32_t& mask, int& need, int& eq) {
    int const lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
        if (32 * k < nVis) { // warp-uniform
            bool const in = 32 * k + lane < nVis && (u[k] & mask) == prefix;
            unsigned const active = __ballot_sync(kFull, in);
            if (active != 0u) { // warp-uniform
                uint32_t const digit = (u[k] >> shift) & 255u;
                unsigned same = 1u << lane;
                if (__popc(active) > 4) { // one atomic per distinct digit (relu's runs of +0.0: one in all)
                    same = __match_any_sync(kFull, in ? digit : 256u);
                }
                if (in && lane == __ffs(same) - 1) {
                    atomicAdd(&hist[histSlot(digit)], __popc(same));
                }
            }
        }
    }
    bool const fence = !QSA_MUTANT(20); // mutant: the histogram read races its atomics
    if (fence) {
        __syncwarp(); // the atomics before the reads
    }
    int c[8];
    int tot = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        int const slot = 9 * lane + j; // histSlot(255 - (8 lane + j)): read and zeroed by its one owner
        c[j] = hist[slot];
        hist[slot] = 0;
        tot += c[j];
    }
    int incl = tot;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int const n = __shfl_up_sync(kFull, incl, o);
        if (lane >= o) {
            incl += n;
        }
    }
    int const excl = incl - tot;
    // The one lane whose 8 digits hold the position where the count from the top reaches need (need <= the
    // bucket's size, so it exists; the clamp only keeps a racing mutant in bounds), then its digit.
    unsigned const reach = __ballot_sync(kFull, excl < need && incl >= need);
    int const owner = reach != 0u ? __ffs(reach) - 1 : 31;
    int run = excl, above = excl, cnt = 0, jSel = 7;
    bool found = false;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        if (!found && run + c[j] >= need) {
            found = true;
            jSel = j;
            above = run;
            cnt = c[j];
        }
        run += c[j];
    }
    above = __shfl_sync(kFull, above, owner);
    cnt = __shfl_sync(kFull, cnt, owner);
    jSel = __shfl_sync(kFull, jSel, owner);
    uint32_t const d = static_cast<uint32_t>(255 - (8 * owner + jSel));
    prefix |= d << shift;
    mask |= 255u << shift;
    need -= above;
    eq = cnt;
    __syncwarp(); // the zeros before the next pass's atomics
}

// Min CTAs per SM from ptxas (sm_90): <32> 80 registers, 6 CTAs (24 warps), none spilled (without a minimum it
// chose 72 and spilled 4 bytes); <64> 128 registers, 4 CTAs (a 6-CTA bound spills 196 bytes).
template <int kItems>
__global__ void __launch_bounds__(32 * kRowsPerCta, kItems == 32 ? 6 : 4)
    prefillSelectWarpKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t seqLen,
                            int32_t numBlocks, int64_t rowBegin, int64_t rowEnd) {
    __shared__ WarpRowSmem sm[kRowsPerCta];
    int const lane = static_cast<int>(threadIdx.x & 31);
    WarpRowSmem& my = sm[threadIdx.x >> 5];
    unsigned long long* const slots = my.slots;
    for (int i = lane; i < 256 + 32; i += 32) {
        my.hist[i] = 0;
    }
    __syncwarp();
    unsigned const lowerLanes = (1u << lane) - 1u;
    int64_t const step = static_cast<int64_t>(gridDim.x) * kRowsPerCta;
    for (int64_t r = rowBegin + static_cast<int64_t>(blockIdx.x) * kRowsPerCta + (threadIdx.x >> 5); r < rowEnd;
         r += step) {
        PrefillRow const geo = prefillRow(r, seqLen, contextLengths);
        if (QSA_MUTANT(23) && geo.padded) {
            continue; // K4 mutant: padded rows keep whatever outIdx held
        }
        int const nVis = geo.nVis, kSel = geo.kSel, tail = geo.tail;
        if (kSel > 0) { // warp-uniform
            float const* row = logits + (r - rowBegin) * numBlocks;
            uint32_t u[kItems];
#pragma unroll
            for (int k = 0; k < kItems; ++k) {
                int const g = 32 * k + lane;
                u[k] = g < nVis ? radixKey(row[g]) : 0u;
            }
            // nVis <= kSel: no pass; mask 0 makes every visible entry a tie, and need = kSel takes them all.
            uint32_t prefix = 0u, mask = 0u;
            int need = kSel, eq = -1;
            if (nVis > kSel) {
                for (int shift = 24; shift >= 0; shift -= 8) {
                    warpRadixPass<kItems>(my.hist, u, nVis, shift, prefix, mask, need, eq);
                    if (need == eq) {
                        break; // the whole threshold bucket is taken: finer digits change nothing
                    }
                }
            }
            // Emit: every entry above the bucket, and the bucket's first `need` in id order.
            int tiesBefore = 0, count = 0;
#pragma unroll
            for (int k = 0; k < kItems; ++k) {
                if (32 * k < nVis) { // warp-uniform
                    int const g = 32 * k + lane;
                    bool const valid = g < nVis;
                    uint32_t const m = u[k] & mask;
                    bool take = valid && m > prefix;
                    bool const tie = valid && m == prefix;
                    unsigned const ties = __ballot_sync(kFull, tie);
                    if (tie) {
                        int const rank = tiesBefore + __popc(ties & lowerLanes);
                        take = rank < need;
                        if (QSA_MUTANT(18) && eq > need) {
                            take = rank >= eq - need; // mutant: the threshold ties taken from the highest ids
                        } else if (QSA_MUTANT(19)) {
                            take = rank < need && rank < 256; // mutant: the threshold bin capped at 256
                        }
                    }
                    tiesBefore += __popc(ties);
                    unsigned const takes = __ballot_sync(kFull, take);
                    if (take) {
                        slots[sortSlot(count + __popc(takes & lowerLanes))] = orderKey(u[k], g);
                    }
                    count += __popc(takes);
                }
            }
            int n = 8;
            while (n < kSel) {
                n <<= 1;
            }
            for (int i = kSel + lane; i < n; i += 32) {
                slots[sortSlot(i)] = 0ull; // below every real key: sorts last
            }
            __syncwarp();
            bitonicSortDesc<WarpTeam>(slots, n);
        }
        expandFromSlots(outIdx + r * kWidth, slots, kSel, nVis, tail, lane, 32);
        __syncwarp(); // this row's K4 reads of slots before the next row's emits
    }
}

} // namespace

void launchPrefillSelectExpand(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t seqLen,
                               int64_t rowBegin, int64_t rowEnd, cudaStream_t stream, PrefillSelectKernel kernel) {
    QSA_MUTANT_SYNC();
    if (rowBegin == rowEnd) {
        return;
    }
    int32_t const numBlocks = static_cast<int32_t>(ceilDiv(seqLen, 4)); // MB >= every row's nVis
    if (kernel == PrefillSelectKernel::WarpPerRow && numBlocks <= 32 * 64) {
        int const grid = gridFor(rowEnd - rowBegin, kRowsPerCta);
        if (numBlocks <= 32 * 32) {
            prefillSelectWarpKernel<32><<<grid, 32 * kRowsPerCta, 0, stream>>>(outIdx, logits, contextLengths, seqLen,
                                                                               numBlocks, rowBegin, rowEnd);
        } else {
            prefillSelectWarpKernel<64><<<grid, 32 * kRowsPerCta, 0, stream>>>(outIdx, logits, contextLengths, seqLen,
                                                                               numBlocks, rowBegin, rowEnd);
        }
        checkLaunch("runQsaIndexerPrefill");
        return;
    }
    int const grid = gridFor(rowEnd - rowBegin, 1);
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

// Block-wide radix select of the first kSel entries of (logit descending, id ascending) of one row, emitted
// in ascending id (contract section 4, Selection). Shared by B3 (decode) and the prefill runner's
// candidate pre-selection. No CUB, no allocation, deterministic (integer counts only).
//
// Key u = sign ? ~bits : bits | 0x80000000 (ascending u = ascending float, -0.0 below +0.0). 8-bit digits
// from the top: each pass histograms the digit among the entries whose higher digits equal the prefix
// found so far and picks the digit where the count from the top reaches `need`. The end state is
// (prefix, mask, need): an entry is selected iff (u & mask) > prefix, or (u & mask) == prefix and fewer
// than `need` equal entries precede it in id order (ties at the threshold go to the lowest ids). When a
// pass finds need == the whole threshold bucket, finer digits change nothing and the passes stop.
//
// A pass costs two block barriers: (1) after the histogram atomics (kWarps / 4 shared copies, zeroed by
// the thread that reads them, so no zeroing barrier), (2) after the per-digit scan tables; every thread
// then finds the threshold digit itself from the tables (integer counts, so every thread gets the same
// state and no broadcast barrier is needed). Warps skip the items where none of their keys is in the
// bucket, and aggregate with __match_any_sync only when more than a few are.
//
// Thread i owns the contiguous ids [i * chunk, (i + 1) * chunk), chunk = ceilDiv(n, kThreads); when
// chunk <= kItems the keys are read once into registers, else every pass re-reads the row.
//
// Scope: BlockScope selects over one CTA's ids. A cluster of CTAs (decode_select.cu, sm_90) splits one row
// into contiguous id ranges, one per CTA in rank order; its scope adds the CTAs' digit counts after
// each pass and offsets each CTA's (greater, equal) counts by those of the lower ranks. Every CTA then
// holds the same integer totals, takes the same digit decisions and emits its own ids at their row-wide
// positions: the selected set and positions are those of one CTA over the whole row.
#pragma once

#include "kernels/qsaCommon.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

__device__ __forceinline__ uint32_t radixKey(float x) {
    uint32_t const bits = __float_as_uint(x);
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__device__ __forceinline__ float radixKeyToFloat(uint32_t u) {
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7FFFFFFFu) : ~u);
}

// Histogram copies: warps w, w + kCopies, ... share copy w % kCopies (4 warps per copy). Fewer copies
// than warps keep the read-and-zero of the totals short; integer atomics, so the counts are exact.
template <int kThreads>
struct RadixSelectSmem {
    static_assert(kThreads % 256 == 0 && kThreads <= 1024, "the 256 digits are owned by the first 8 warps");
    static constexpr int kWarps = kThreads / 32;
    static constexpr int kCopies = kWarps / 4 > 0 ? kWarps / 4 : 1;
    int hist[kCopies][256];
    int digitIncl[256]; // position t = 255 - digit: the count of positions <= t within t's warp
    int digitWarp[8];   // the count of the 32 positions of digit warp w
    int2 warpTot[33];   // final (greater, equal) counts per warp; [32]: the block totals
};

// Block-wide exclusive scan of two counters (integers: exact in any order). warpTot is written again
// only after the next row's leading barrier: no trailing barrier.
template <int kThreads>
__device__ __forceinline__ void blockExclusiveScan2(int a, int c, int& aBefore, int& cBefore, int2& blockTotal,
                                                    int2* warpTot) {
    constexpr int kWarps = kThreads / 32;
    int const lane = threadIdx.x & 31;
    int const warp = threadIdx.x >> 5;
    int sa = a, sc = c;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int const na = __shfl_up_sync(kFull, sa, o);
        int const nc = __shfl_up_sync(kFull, sc, o);
        if (lane >= o) {
            sa += na;
            sc += nc;
        }
    }
    if (lane == 31) {
        warpTot[warp] = make_int2(sa, sc);
    }
    __syncthreads();
    if (warp == 0) {
        int2 const v = lane < kWarps ? warpTot[lane] : make_int2(0, 0);
        int xa = v.x, xc = v.y;
#pragma unroll
        for (int o = 1; o < kWarps; o <<= 1) {
            int const na = __shfl_up_sync(kFull, xa, o);
            int const nc = __shfl_up_sync(kFull, xc, o);
            if (lane >= o) {
                xa += na;
                xc += nc;
            }
        }
        // Lane l rewrites only the entry it read itself, [32] is read after the barrier: no race.
        if (lane < kWarps) {
            warpTot[lane] = make_int2(xa - v.x, xc - v.y); // exclusive warp offsets
        }
        if (lane == kWarps - 1) {
            warpTot[32] = make_int2(xa, xc); // block totals
        }
    }
    __syncthreads();
    aBefore = warpTot[warp].x + sa - a;
    cBefore = warpTot[warp].y + sc - c;
    blockTotal = warpTot[32];
}

// One CTA is the whole row: nothing to add.
struct BlockScope {
    // count: this CTA's count of digit 255 - t (t < 256; every thread calls). Returns the row's.
    __device__ __forceinline__ int reduceDigit(int count, int /*t*/, int /*pass*/) const { return count; }
    __device__ __forceinline__ void reduceCounts(int2 /*blockTotal*/, int& gtOff, int& eqOff) const {
        gtOff = 0;
        eqOff = 0;
    }
};

// The selection state: an entry is in the threshold bucket iff (u & mask) == prefix; need of its entries
// are still to take; eq its size (-1 before any pass). Every thread holds the same values (the decisions
// are computed redundantly from the same shared integer totals, so no broadcast barrier is needed).
struct RadixState {
    uint32_t prefix;
    uint32_t mask;
    int need;
    int eq;
};

// One histogram pass + digit choice. `keyAt(k, valid)` gives the key of the thread's k-th id. On entry the
// histogram copies are zero and no thread reads the digit tables any more (the previous pass's readers
// passed barrier (1) of this pass before it writes them); on return the copies are zero again.
template <int kThreads, typename KeyAt, typename Scope>
__device__ __forceinline__ void radixPass(RadixSelectSmem<kThreads>& sm, RadixState& st, int shift, int chunk,
                                          KeyAt keyAt, Scope const& scope) {
    constexpr int kCopies = RadixSelectSmem<kThreads>::kCopies;
    constexpr int kSparse = 4; // at most this many in-keys in a warp: direct atomics (conflicts <= 4-way)
    int const lane = threadIdx.x & 31;
    int const warp = threadIdx.x >> 5;
    int const t = threadIdx.x; // t < 256: owns digit 255 - t (the counts are taken from the top)
    uint32_t const prefix = st.prefix;
    uint32_t const mask = st.mask;
    int* const hist = sm.hist[warp % kCopies];
    keyAt.forEach(chunk, [&](uint32_t u, bool valid) {
        bool const in = valid && (u & mask) == prefix;
        unsigned const active = __ballot_sync(kFull, in);
        if (active == 0u) {
            return; // warp-uniform: after the first passes most keys are out
        }
        uint32_t const digit = (u >> shift) & 255u;
        // Warp-aggregated histogram: one atomic per distinct digit of the warp (the out-keys form their own
        // group, 256, and add nothing). With few in-keys the match is skipped: one atomic per in-key.
        unsigned same = 1u << lane;
        if (__popc(active) > kSparse) { // warp-uniform
            same = __match_any_sync(kFull, in ? digit : 256u);
        }
        if (in && lane == __ffs(same) - 1) {
            atomicAdd(&hist[digit], __popc(same));
        }
    });
    bool const barrier = !QSA_MUTANT(20); // mutant: the histogram read races its atomics
    if (barrier) {
        __syncthreads(); // (1) every atomic of this pass is done
    }
    int count = 0;
    if (t < 256) {
        // Read and zero: this thread is the only one touching column 255 - t until barrier (1) of the
        // next pass, which follows barrier (2) below.
#pragma unroll
        for (int c = 0; c < kCopies; ++c) {
            count += sm.hist[c][255 - t];
            sm.hist[c][255 - t] = 0;
        }
    }
    count = scope.reduceDigit(count, t, (24 - shift) / 8); // the row's count (a cluster adds its CTAs')
    if (t < 256) {                                         // warps 0..7 whole: the shuffles are warp-uniform
        int incl = count;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            int const n = __shfl_up_sync(kFull, incl, o);
            if (lane >= o) {
                incl += n;
            }
        }
        sm.digitIncl[t] = incl;
        if (lane == 31) {
            sm.digitWarp[warp] = incl;
        }
    }
    __syncthreads(); // (2) the digit tables are complete
    // Every warp: the first position t (from digit 255 down) where the count from the top reaches need,
    // i.e. above < need <= above + count(t): the first digit warp whose running total reaches need, then
    // its first lane. need <= the bucket's size, so both exist; the clamps only keep a racing mutant in
    // bounds.
    int const need = st.need;
    int const wv = lane < 8 ? sm.digitWarp[lane] : 0;
    int wincl = wv;
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) {
        int const n = __shfl_up_sync(kFull, wincl, o);
        if (lane >= o) {
            wincl += n;
        }
    }
    unsigned const reachW = __ballot_sync(kFull, lane < 8 && wincl >= need);
    int const w = reachW != 0u ? __ffs(reachW) - 1 : 7;
    int const wBefore = __shfl_sync(kFull, wincl - wv, w);
    int const v = sm.digitIncl[32 * w + lane];
    int vPrev = __shfl_up_sync(kFull, v, 1);
    if (lane == 0) {
        vPrev = 0;
    }
    unsigned const reachL = __ballot_sync(kFull, wBefore + v >= need);
    int const l = reachL != 0u ? __ffs(reachL) - 1 : 31;
    int const above = wBefore + __shfl_sync(kFull, vPrev, l);
    int const cnt = __shfl_sync(kFull, v - vPrev, l);
    uint32_t const d = static_cast<uint32_t>(255 - (32 * w + l));
    st.prefix = prefix | (d << shift);
    st.mask = mask | (255u << shift);
    st.need = need - above;
    st.eq = cnt;
}

// Keys from registers (chunk <= kItems).
template <int kItems>
struct CachedKeys {
    uint32_t u[kItems];
    int count; // valid keys of this thread
    template <typename F>
    __device__ __forceinline__ void forEach(int /*chunk*/, F f) const {
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            f(u[k], k < count);
        }
    }
};

// Keys re-read from the row (any chunk).
struct RowKeys {
    float const* row;
    int gBegin;
    int gEnd;
    template <typename F>
    __device__ __forceinline__ void forEach(int chunk, F f) const {
        for (int k = 0; k < chunk; ++k) {
            int const g = gBegin + k;
            bool const valid = g < gEnd;
            f(valid ? radixKey(row[g]) : 0u, valid);
        }
    }
};

// Selects the first kSel of row[0, n) and calls emit(pos, g, key) for each selected id g, pos = its rank
// in ascending id order (0 .. min(kSel, n) - 1). All threads of the block (of the cluster) must call it.
template <int kThreads, typename Keys, typename Emit, typename Scope = BlockScope>
__device__ __forceinline__ void radixSelectEmit(RadixSelectSmem<kThreads>& sm, Keys const& keys, int n, int kSel,
                                                int gBegin, int chunk, Emit emit, Scope const& scope = Scope()) {
    // Zero the histogram copies: every earlier access to them (an earlier row's) precedes a barrier this
    // thread has passed. The barrier then orders the zeros before the atomics and, for the caller, every
    // reader of a previous row's emitted data before this row's emits.
    for (int i = threadIdx.x; i < RadixSelectSmem<kThreads>::kCopies * 256; i += kThreads) {
        (&sm.hist[0][0])[i] = 0;
    }
    __syncthreads();
    RadixState st{0u, 0u, kSel, -1};
    if (n > kSel) {
        for (int shift = 24; shift >= 0; shift -= 8) {
            radixPass<kThreads>(sm, st, shift, chunk, keys, scope);
            if (st.need == st.eq) {
                break; // the whole threshold bucket is taken: finer digits change nothing
            }
        }
    }
    // n <= kSel: mask 0, prefix 0, need kSel >= n: every entry is an equal one and all are taken.
    uint32_t const prefix = st.prefix;
    uint32_t const mask = st.mask;
    int const need = st.need;
    int nGt = 0, nEq = 0;
    keys.forEach(chunk, [&](uint32_t u, bool valid) {
        uint32_t const m = u & mask;
        nGt += (valid && m > prefix) ? 1 : 0;
        nEq += (valid && m == prefix) ? 1 : 0;
    });
    int gtBefore, eqBefore;
    int2 blockTotal;
    blockExclusiveScan2<kThreads>(nGt, nEq, gtBefore, eqBefore, blockTotal, sm.warpTot);
    int gtOff, eqOff;
    scope.reduceCounts(blockTotal, gtOff, eqOff); // ids of lower-ranked CTAs precede this CTA's
    gtBefore += gtOff;
    eqBefore += eqOff;
    int pos = gtBefore + min(eqBefore, need);
    if (QSA_MUTANT(18) && st.eq > need) {
        eqBefore -= st.eq - need; // the threshold ties taken from the highest ids
        pos = gtBefore + min(max(eqBefore, 0), need);
    }
    int k = 0;
    keys.forEach(chunk, [&](uint32_t u, bool valid) {
        uint32_t const m = u & mask;
        bool take = valid && m > prefix;
        if (valid && m == prefix) {
            take = eqBefore < need;
            if (QSA_MUTANT(18)) {
                take = eqBefore >= 0 && eqBefore < need;
            } else if (QSA_MUTANT(19)) {
                take = eqBefore < need && eqBefore < 256;
            }
            ++eqBefore;
        }
        if (take) {
            emit(pos, gBegin + k, u);
            ++pos;
        }
        ++k;
    });
}

// radixSelectEmit over row[0, nVis), one contiguous chunk of ids per thread: the chunk's keys held in
// registers when it fits kItems (one read of the row), else re-read from the row on every pass.
template <int kThreads, int kItems, typename Emit>
__device__ __forceinline__ void radixSelectRowEmit(RadixSelectSmem<kThreads>& sm, float const* row, int nVis, int kSel,
                                                   Emit emit) {
    int const chunk = (nVis + kThreads - 1) / kThreads;
    int const gBegin = min(nVis, static_cast<int>(threadIdx.x) * chunk);
    int const gEnd = min(nVis, gBegin + chunk);
    if (chunk <= kItems) {
        CachedKeys<kItems> keys;
        keys.count = gEnd - gBegin;
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            keys.u[k] = k < keys.count ? radixKey(row[gBegin + k]) : 0u;
        }
        radixSelectEmit<kThreads>(sm, keys, nVis, kSel, gBegin, chunk, emit);
    } else {
        RowKeys const keys{row, gBegin, gEnd};
        radixSelectEmit<kThreads>(sm, keys, nVis, kSel, gBegin, chunk, emit);
    }
}

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

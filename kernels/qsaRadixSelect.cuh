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
// Thread i owns the contiguous ids [i * chunk, (i + 1) * chunk), chunk = ceilDiv(n, kThreads); when
// chunk <= kItems the keys are read once into registers, else every pass re-reads the row.
//
// Scope: BlockScope selects over one CTA's ids. A cluster of CTAs (decode_select.cu, sm_90) splits one row
// into contiguous id ranges, one per CTA in rank order; its scope adds the CTAs' digit histograms after
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

template <int kThreads>
struct RadixSelectSmem {
    int hist[kThreads / 32][256];
    int histTotal[256];
    int2 warpTot[33]; // [32]: the block totals
    uint32_t prefix;
    uint32_t mask;
    int need;
    int eq;
};

// Block-wide exclusive scan of two counters (integers: exact in any order).
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
        for (int o = 1; o < 32; o <<= 1) {
            int const na = __shfl_up_sync(kFull, xa, o);
            int const nc = __shfl_up_sync(kFull, xc, o);
            if (lane >= o) {
                xa += na;
                xc += nc;
            }
        }
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
    __syncthreads(); // warpTot may be reused
}

// One CTA is the whole row: nothing to add.
struct BlockScope {
    __device__ __forceinline__ void reduceHist(int* /*histTotal*/, int /*pass*/) const {}
    __device__ __forceinline__ void reduceCounts(int2 /*blockTotal*/, int& gtOff, int& eqOff) const {
        gtOff = 0;
        eqOff = 0;
    }
};

// One histogram pass + digit choice. `keyAt(k, valid)` gives the key of the thread's k-th id.
template <int kThreads, typename KeyAt, typename Scope>
__device__ __forceinline__ void radixPass(RadixSelectSmem<kThreads>& sm, int shift, int chunk, KeyAt keyAt,
                                          Scope const& scope) {
    constexpr int kWarps = kThreads / 32;
    int const lane = threadIdx.x & 31;
    int const warp = threadIdx.x >> 5;
    for (int i = threadIdx.x; i < kWarps * 256; i += kThreads) {
        (&sm.hist[0][0])[i] = 0;
    }
    __syncthreads();
    uint32_t const prefix = sm.prefix;
    uint32_t const mask = sm.mask;
    keyAt.forEach(chunk, [&](uint32_t u, bool valid) {
        bool const in = valid && (u & mask) == prefix;
        uint32_t const digit = (u >> shift) & 255u;
        // Warp-aggregated histogram: one atomic per distinct digit of the warp.
        unsigned const active = __ballot_sync(kFull, in);
        if (in) {
            unsigned const same = __match_any_sync(active, digit);
            if (lane == __ffs(same) - 1) {
                atomicAdd(&sm.hist[warp][digit], __popc(same));
            }
        }
    });
    bool const barrier = !QSA_MUTANT(20); // mutant: the histogram read races its atomics
    if (barrier) {
        __syncthreads();
    }
    for (int d = threadIdx.x; d < 256; d += kThreads) {
        int s = 0;
        for (int w = 0; w < kWarps; ++w) {
            s += sm.hist[w][d];
        }
        sm.histTotal[d] = s;
    }
    __syncthreads();
    scope.reduceHist(sm.histTotal, (24 - shift) / 8); // the row's totals (a cluster adds its CTAs')
    if (warp == 0) {
        // Lane l owns digits 255 - 8l - k, k < 8; counts from the top (digit 255 first).
        int cnt[8];
        int mine = 0;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            cnt[k] = sm.histTotal[255 - 8 * lane - k];
            mine += cnt[k];
        }
        int incl = mine;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            int const n = __shfl_up_sync(kFull, incl, o);
            if (lane >= o) {
                incl += n;
            }
        }
        int above = incl - mine;
        int const need = sm.need;
        // Every lane has read sm.need before the one owning lane overwrites it below: without this
        // barrier the read and the write race under independent thread scheduling (racecheck).
        __syncwarp(kFull);
        if (above < need && need <= incl) {
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                if (above < need && need <= above + cnt[k]) {
                    uint32_t const d = static_cast<uint32_t>(255 - 8 * lane - k);
                    sm.prefix = prefix | (d << shift);
                    sm.mask = mask | (255u << shift);
                    sm.need = need - above;
                    sm.eq = cnt[k];
                }
                above += cnt[k];
            }
        }
    }
    __syncthreads();
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
    __syncthreads(); // a previous row's readers of sm are done
    if (threadIdx.x == 0) {
        sm.prefix = 0u;
        sm.mask = 0u;
        sm.need = kSel;
        sm.eq = -1;
    }
    __syncthreads();
    if (n > kSel) {
        for (int shift = 24; shift >= 0; shift -= 8) {
            radixPass<kThreads>(sm, shift, chunk, keys, scope);
            if (sm.need == sm.eq) {
                break;
            }
        }
    }
    // n <= kSel: mask 0, prefix 0, need kSel >= n: every entry is an equal one and all are taken.
    uint32_t const prefix = sm.prefix;
    uint32_t const mask = sm.mask;
    int const need = sm.need;
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
    if (QSA_MUTANT(18) && sm.eq > need) {
        eqBefore -= sm.eq - need; // the threshold ties taken from the highest ids
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

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

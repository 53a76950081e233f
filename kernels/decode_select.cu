// B3 decode select + expand (contract sections 4-5) and the split-counter zeroing. No CUB, no allocation,
// deterministic, graph-capturable.
//
// Selection = the first kSel = min(512, nVis) blocks of (logit descending, id ascending), emitted in
// ascending id. Radix select on u = sign ? ~bits : bits | 0x80000000 (ascending u = ascending float, -0.0
// below +0.0): 8-bit digits from the top; each pass histograms the digit among the entries whose higher
// digits equal the prefix found so far and picks the digit where the count from the top reaches `need`.
// The end state is (prefix, mask, need): an entry is selected iff (u & mask) > prefix, or (u & mask) ==
// prefix and fewer than `need` equal entries precede it in id order (ties at the threshold go to the
// lowest ids). Counts are integers, so the atomics' order changes nothing. nVis <= 512 selects every
// block and reads no logit: the row is then simply out[i] = i for i < ctx.
#include "kernels/qsaCommon.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ uint32_t radixKey(float x) {
    uint32_t const bits = __float_as_uint(x);
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Block-wide exclusive scan of two counters (integers: exact in any order).
__device__ __forceinline__ void blockExclusiveScan2(int a, int c, int& aBefore, int& cBefore, int2* warpTot) {
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
        int2 v = warpTot[lane];
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
        warpTot[lane] = make_int2(xa - v.x, xc - v.y); // exclusive warp offsets
    }
    __syncthreads();
    aBefore = warpTot[warp].x + sa - a;
    cBefore = warpTot[warp].y + sc - c;
}

__global__ void __launch_bounds__(kThreads)
    decodeSelectKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t maxBlocks) {
    __shared__ int hist[kWarps][256];
    __shared__ int histTotal[256];
    __shared__ uint32_t sPrefix, sMask;
    __shared__ int sNeed, sEq;
    __shared__ int2 warpTot[kWarps];

    int64_t const b = blockIdx.x;
    int32_t* out = outIdx + b * kWidth;
    int64_t const ctx = contextLengths[b];
    if (ctx < 1 || (ctx + 3) / 4 > maxBlocks) {
        for (int p = threadIdx.x; p < kWidth; p += kThreads) {
            out[p] = -1; // invalid row
        }
        return;
    }
    int const nVis = static_cast<int>(ctx / 4);
    int const tail = static_cast<int>(ctx % 4);
    if (nVis <= kTopK) {
        // Every block selected, in ascending id, then the tail: out[i] = i for i < 4 nVis + tail = ctx.
        for (int p = threadIdx.x; p < kWidth; p += kThreads) {
            out[p] = p < ctx ? p : -1;
        }
        return;
    }
    float const* row = logits + b * maxBlocks;
    int const lane = threadIdx.x & 31;
    int const warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        sPrefix = 0u;
        sMask = 0u;
        sNeed = kTopK;
        sEq = -1;
    }
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = threadIdx.x; i < kWarps * 256; i += kThreads) {
            (&hist[0][0])[i] = 0;
        }
        __syncthreads();
        uint32_t const prefix = sPrefix;
        uint32_t const mask = sMask;
        for (int g0 = 0; g0 < nVis; g0 += kThreads) {
            int const g = g0 + threadIdx.x;
            bool in = false;
            uint32_t digit = 0;
            if (g < nVis) {
                uint32_t const u = radixKey(row[g]);
                in = (u & mask) == prefix;
                digit = (u >> shift) & 255u;
            }
            // Warp-aggregated histogram: one atomic per distinct digit of the warp.
            unsigned const active = __ballot_sync(kFull, in);
            if (in) {
                unsigned const same = __match_any_sync(active, digit);
                if (lane == __ffs(same) - 1) {
                    atomicAdd(&hist[warp][digit], __popc(same));
                }
            }
        }
        __syncthreads();
        if (threadIdx.x < 256) {
            int s = 0;
            for (int w = 0; w < kWarps; ++w) {
                s += hist[w][threadIdx.x];
            }
            histTotal[threadIdx.x] = s;
        }
        __syncthreads();
        if (warp == 0) {
            // Lane l owns digits [255 - 8l - 7, 255 - 8l]; counts from the top (digit 255 first).
            int cnt[8];
            int mine = 0;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                cnt[k] = histTotal[255 - 8 * lane - k];
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
            int above = incl - mine; // entries with a higher digit than this lane's first
            int const need = sNeed;
            if (above < need && need <= incl) {
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    if (above < need && need <= above + cnt[k]) {
                        uint32_t const d = static_cast<uint32_t>(255 - 8 * lane - k);
                        sPrefix = prefix | (d << shift);
                        sMask = mask | (255u << shift);
                        sNeed = need - above;
                        sEq = cnt[k];
                    }
                    above += cnt[k];
                }
            }
        }
        __syncthreads();
        if (sNeed == sEq) {
            break; // the whole threshold bucket is taken: finer digits change nothing
        }
    }
    uint32_t const prefix = sPrefix;
    uint32_t const mask = sMask;
    int const need = sNeed;

    // Emit in ascending id: each thread owns a contiguous id range.
    int const chunk = (nVis + kThreads - 1) / kThreads;
    int const gBegin = min(nVis, static_cast<int>(threadIdx.x) * chunk);
    int const gEnd = min(nVis, gBegin + chunk);
    int nGt = 0, nEq = 0;
    for (int g = gBegin; g < gEnd; ++g) {
        uint32_t const m = radixKey(row[g]) & mask;
        nGt += m > prefix;
        nEq += m == prefix;
    }
    int gtBefore, eqBefore;
    blockExclusiveScan2(nGt, nEq, gtBefore, eqBefore, warpTot);
    int pos = gtBefore + min(eqBefore, need);
    for (int g = gBegin; g < gEnd; ++g) {
        uint32_t const m = radixKey(row[g]) & mask;
        bool take = m > prefix;
        if (m == prefix) {
            take = eqBefore < need;
            ++eqBefore;
        }
        if (take) {
            int4 const v = make_int4(4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3);
            int32_t* o = out + 4 * pos;
            o[0] = v.x;
            o[1] = v.y;
            o[2] = v.z;
            o[3] = v.w;
            ++pos;
        }
    }
    // Tail 4 nVis + j at 2048 + j, then -1.
    for (int p = 4 * kTopK + threadIdx.x; p < kWidth; p += kThreads) {
        int const j = p - 4 * kTopK;
        out[p] = j < tail ? 4 * nVis + j : -1;
    }
}

__global__ void zeroSplitCountersKernel(int32_t* splitCounters, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        splitCounters[i] = 0;
    }
}

} // namespace
} // namespace qsa_detail

using namespace qsa_detail;

void launchQsaDecodeSelect(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t batchSize,
                           int32_t maxBlocks, cudaStream_t stream) {
    char const* fn = "launchQsaDecodeSelect";
    requirePtr(fn, "outIdx", outIdx);
    requirePtr(fn, "logits", logits);
    requirePtr(fn, "contextLengths", contextLengths);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "maxBlocks", maxBlocks);
    decodeSelectKernel<<<batchSize, kThreads, 0, stream>>>(outIdx, logits, contextLengths, maxBlocks);
    checkLaunch(fn);
}

void launchQsaZeroSplitCounters(int32_t* splitCounters, int32_t batchSize, int32_t numKVHeads, cudaStream_t stream) {
    char const* fn = "launchQsaZeroSplitCounters";
    requirePtr(fn, "splitCounters", splitCounters);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "numKVHeads", numKVHeads);
    int64_t const n = static_cast<int64_t>(batchSize) * numKVHeads;
    int64_t const grid = ceilDiv(n, 256);
    zeroSplitCountersKernel<<<static_cast<unsigned>(grid < 4096 ? grid : 4096), 256, 0, stream>>>(splitCounters, n);
    checkLaunch(fn);
}

} // namespace kernel
} // namespace trt_edgellm

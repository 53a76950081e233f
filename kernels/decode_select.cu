// B3 decode select + expand (contract sections 4-5), with the split-counter zeroing folded in (the runner's
// B3 is one launch), and the stand-alone split-counter zeroing launcher. No CUB, no allocation,
// deterministic, graph-capturable.
//
// Selection: kernels/qsaRadixSelect.cuh. nVis <= 512 selects every block and reads no logit: the row
// is then simply out[i] = i for i < ctx.
//
// Two kernels, the same rows: on sm_90 and later a cluster of kCluster CTAs shares each row (the row's ids
// split into kCluster contiguous ranges, histograms and counts added through distributed shared memory,
// see qsaRadixSelect.cuh), so one row is not one CTA's latency; on older GPUs one CTA per row. The host
// picks by the device's compute capability; both give the same bits.
#include <cooperative_groups.h>

#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"
#include "kernels/qsaRadixSelect.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

constexpr int kThreads = 1024;
constexpr int kItems = 32;           // rows up to 32768 blocks (ctx 131072) keep their keys in registers
constexpr int kCluster = 8;          // CTAs per row in the cluster kernel (the portable cluster size)
constexpr int kClusterThreads = 512; // threads per CTA there

// The row's geometry and the rows that need no radix select (contract section 5: invalid rows all -1;
// nVis <= 512: every block, then the tail). Returns true when the row is done. Uniform over the CTA.
struct RowInfo {
    int nVis;
    int tail;
};

__device__ __forceinline__ bool rowPrologue(int32_t* out, int64_t ctx, int32_t maxBlocks, int rank, int nThreads,
                                            int nRanks, RowInfo& info) {
    int const tid = rank * nThreads + static_cast<int>(threadIdx.x);
    int const stride = nRanks * nThreads;
    if (ctx < 1 || ctx / 4 > maxBlocks) {
        for (int p = tid; p < kWidth; p += stride) {
            out[p] = -1; // invalid row
        }
        return true;
    }
    info.nVis = static_cast<int>(ctx / 4);
    if (QSA_MUTANT(34)) {
        info.nVis = static_cast<int>((ctx + 3) / 4);
    }
    info.tail = static_cast<int>(ctx % 4);
    if (info.nVis <= kTopK) {
        // Every block selected, in ascending id, then the tail: out[i] = i for i < 4 nVis + tail = ctx.
        for (int p = tid; p < kWidth; p += stride) {
            out[p] = p < ctx ? p : -1;
        }
        return true;
    }
    return false;
}

// Tail 4 nVis + j at 2048 + j, then -1.
__device__ __forceinline__ void writeTail(int32_t* out, RowInfo const& info, int nThreads) {
    for (int p = 4 * kTopK + static_cast<int>(threadIdx.x); p < kWidth; p += nThreads) {
        int const j = p - 4 * kTopK;
        out[p] = j < info.tail ? 4 * info.nVis + j : -1;
    }
}

struct EmitExpanded {
    int32_t* out;
    __device__ __forceinline__ void operator()(int pos, int g, uint32_t) const {
        int32_t* o = out + 4 * pos;
        o[0] = 4 * g;
        o[1] = 4 * g + 1;
        o[2] = 4 * g + 2;
        o[3] = 4 * g + 3;
    }
};

// B3 first zeroes splitCounters row b (contract section 5), valid row or not; nothing here reads them.
__device__ __forceinline__ void zeroRow(int32_t* splitCounters, int64_t b, int32_t numKVHeads) {
    if (splitCounters != nullptr) {
        for (int h = threadIdx.x; h < numKVHeads; h += blockDim.x) {
            splitCounters[b * numKVHeads + h] = 0;
        }
    }
}

__global__ void __launch_bounds__(kThreads)
    decodeSelectKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t maxBlocks,
                       int32_t* splitCounters, int32_t numKVHeads) {
    __shared__ RadixSelectSmem<kThreads> sm;
    waitForPrevious(); // B2's logits (launched after it: launchAfterPrevious)
    int64_t const b = blockIdx.x;
    zeroRow(splitCounters, b, numKVHeads);
    int32_t* out = outIdx + b * kWidth;
    RowInfo info;
    if (rowPrologue(out, contextLengths[b], maxBlocks, 0, kThreads, 1, info)) {
        return;
    }
    int const nVis = info.nVis;
    EmitExpanded const emit{out};
    radixSelectRowEmit<kThreads, kItems>(sm, logits + b * maxBlocks, nVis, kTopK, emit);
    writeTail(out, info, kThreads);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define QSA_HAVE_CLUSTERS 1

namespace cg = cooperative_groups;

constexpr int kClusterItems = 8; // keys per thread in registers: rows up to 32768 blocks

// The row's totals over the cluster's CTAs (qsaRadixSelect.cuh, Scope). Integer sums: exact in any order.
struct ClusterScope {
    int (*exch)[256]; // this CTA's digit counts of the last two passes (double-buffered)
    int2* tot;        // [kCluster]: slot r holds rank r's (greater, equal) totals, pushed by rank r
    __device__ __forceinline__ int reduceDigit(int count, int t, int pass) const {
        cg::cluster_group cluster = cg::this_cluster();
        int* mine = exch[pass & 1];
        if (t < 256) {
            mine[t] = count;
        }
        // Every CTA's counts of this pass are written. A buffer is rewritten two passes later, after the
        // next pass's cluster barrier, which no CTA passes before its reads below are done.
        cluster.sync();
        int s = 0;
        if (t < 256) {
            for (int r = 0; r < kCluster; ++r) {
                s += cluster.map_shared_rank(mine, r)[t];
            }
        }
        return s;
    }
    // The row has nVis > kTopK (rowPrologue), so a pass's cluster barrier came first: every CTA of the
    // cluster runs. Each CTA pushes its totals to the higher ranks; after the barrier no CTA touches another's
    // shared memory (the passes' remote reads precede it too), so each may leave.
    __device__ __forceinline__ void reduceCounts(int2 blockTotal, int& gtOff, int& eqOff) const {
        gtOff = 0;
        eqOff = 0;
        cg::cluster_group cluster = cg::this_cluster();
        int const rank = static_cast<int>(cluster.block_rank());
        int const t = static_cast<int>(threadIdx.x);
        if (t > rank && t < kCluster) {
            *cluster.map_shared_rank(&tot[rank], t) = blockTotal;
        }
        cluster.sync();
        for (int r = 0; r < rank; ++r) {
            int2 const v = tot[r];
            gtOff += v.x;
            eqOff += v.y;
        }
    }
};

#endif // sm_90: clusters

// One row per cluster of kCluster CTAs (grid = kCluster * B, cluster dims set at launch).
__global__ void __launch_bounds__(kClusterThreads)
    decodeSelectClusterKernel(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t maxBlocks,
                              int32_t* splitCounters, int32_t numKVHeads) {
#if defined(QSA_HAVE_CLUSTERS)
    __shared__ RadixSelectSmem<kClusterThreads> sm;
    __shared__ int exch[2][256];
    __shared__ int2 tot[kCluster];
    waitForPrevious(); // B2's logits (launched after it: launchAfterPrevious)
    cg::cluster_group cluster = cg::this_cluster();
    int const rank = static_cast<int>(cluster.block_rank());
    int64_t const b = blockIdx.x / kCluster;
    if (rank == 0) {
        zeroRow(splitCounters, b, numKVHeads);
    }
    int32_t* out = outIdx + b * kWidth;
    RowInfo info;
    // Uniform over the cluster (it depends on the row only): all CTAs leave together, before any
    // distributed shared memory access.
    if (rowPrologue(out, contextLengths[b], maxBlocks, rank, kClusterThreads, kCluster, info)) {
        return;
    }
    int const nVis = info.nVis;
    float const* row = logits + b * maxBlocks;
    // This CTA's ids [lo, hi), contiguous and in rank order; thread i owns [lo + i * chunk, ...).
    int const slice = (nVis + kCluster - 1) / kCluster;
    int const lo = min(nVis, rank * slice);
    int const hi = min(nVis, lo + slice);
    int const chunk = (slice + kClusterThreads - 1) / kClusterThreads;
    int const gBegin = min(hi, lo + static_cast<int>(threadIdx.x) * chunk);
    int const gEnd = min(hi, gBegin + chunk);
    EmitExpanded const emit{out};
    ClusterScope const scope{exch, tot};
    if (chunk <= kClusterItems) {
        CachedKeys<kClusterItems> keys;
        keys.count = gEnd - gBegin;
#pragma unroll
        for (int k = 0; k < kClusterItems; ++k) {
            keys.u[k] = k < keys.count ? radixKey(row[gBegin + k]) : 0u;
        }
        radixSelectEmit<kClusterThreads>(sm, keys, nVis, kTopK, gBegin, chunk, emit, scope);
    } else {
        RowKeys const keys{row, gBegin, gEnd};
        radixSelectEmit<kClusterThreads>(sm, keys, nVis, kTopK, gBegin, chunk, emit, scope);
    }
    if (rank == 0) {
        writeTail(out, info, kClusterThreads);
    }
#endif
}

__global__ void zeroSplitCountersKernel(int32_t* splitCounters, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        splitCounters[i] = 0;
    }
}

// Cluster launch needs compute capability 9.0 (the device's own attribute, queried once per device).
bool deviceHasClusters() {
    return cachedDeviceAttribute<cudaDevAttrClusterLaunch>() != 0;
}

} // namespace

void launchDecodeSelectImpl(char const* fn, int32_t* outIdx, float const* logits, int32_t const* contextLengths,
                            int32_t* splitCounters, int32_t numKVHeads, int32_t batchSize, int32_t maxBlocks,
                            cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    if (deviceHasClusters() && static_cast<int64_t>(batchSize) * kCluster <= 0x7FFFFFFF) {
        launchAfterPrevious(fn, decodeSelectClusterKernel, dim3(static_cast<unsigned>(batchSize) * kCluster),
                            dim3(kClusterThreads), stream, static_cast<unsigned>(kCluster), outIdx, logits,
                            contextLengths, maxBlocks, splitCounters, numKVHeads);
    } else {
        launchAfterPrevious(fn, decodeSelectKernel, dim3(static_cast<unsigned>(batchSize)), dim3(kThreads), stream, 1u,
                            outIdx, logits, contextLengths, maxBlocks, splitCounters, numKVHeads);
    }
}

} // namespace qsa_detail

using namespace qsa_detail;

void launchQsaDecodeSelect(int32_t* outIdx, float const* logits, int32_t const* contextLengths, int32_t batchSize,
                           int32_t maxBlocks, cudaStream_t stream) {
    char const* fn = "launchQsaDecodeSelect";
    requirePtr(fn, "outIdx", outIdx);
    requirePtr(fn, "logits", logits);
    requirePtr(fn, "contextLengths", contextLengths);
    requireDecodeShape(fn, batchSize, maxBlocks);
    launchDecodeSelectImpl(fn, outIdx, logits, contextLengths, nullptr, 0, batchSize, maxBlocks, stream);
}

void launchQsaZeroSplitCounters(int32_t* splitCounters, int32_t batchSize, int32_t numKVHeads, cudaStream_t stream) {
    char const* fn = "launchQsaZeroSplitCounters";
    requirePtr(fn, "splitCounters", splitCounters);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "numKVHeads", numKVHeads);
    int64_t const n = static_cast<int64_t>(batchSize) * numKVHeads;
    zeroSplitCountersKernel<<<gridFor(n, 256, 4096), 256, 0, stream>>>(splitCounters, n);
    checkLaunch(fn);
}

} // namespace kernel
} // namespace trt_edgellm

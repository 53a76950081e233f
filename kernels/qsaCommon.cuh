// Internal helpers shared by the QSA indexer kernels: the contract's `ieee` numerics (section 4), the
// paged-pool addressing and guards (section 3), and host-side argument checks (section 2).
// Every floating-point operation here is written with an explicitly rounded intrinsic (__fmul_rn,
// __fadd_rn, fmaf) so that the result does not depend on --fmad; the build also passes --fmad=false.
// //kernels:qsa_kernels_fast compiles the same code with --use_fast_math and -DQSA_FAST_MATH (profile `fast`,
// contract section 9): FTZ (F5) and rsqrtf (F3) are then its only differences (tools/mutants/README.md).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/qsaIndexerKernels.h"
#include "kernels/qsaMutants.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

constexpr int kHeads = kQSA_INDEXER_NUM_HEADS;    // 4
constexpr int kDim = kQSA_INDEXER_HEAD_DIM;       // 128
constexpr int kQkWidth = kQSA_INDEX_QK_WIDTH;     // 640
constexpr int kWidth = kQSA_INDEX_WIDTH;          // 2051
constexpr int kTopK = kQSA_BLOCK_TOPK;            // 512
constexpr int kRawKCol = kHeads * kDim;           // raw k at columns [512, 640)
constexpr uint32_t kLogitScaleBits = 0x3DB504F3u; // float nearest 1/sqrt(128)
constexpr uint32_t kFull = 0xFFFFFFFFu;

// ---------------------------------------------------------------------------------------------
// Numerics (contract section 4)
// ---------------------------------------------------------------------------------------------

// Casts from T are exact; casts to T round to nearest even, overflow to +-inf, and EVERY NaN becomes
// 0x7FFF (sign and payload dropped). CUDA's cvt already gives the canonical NaN, but the sm_75 bf16
// path is a software emulation: canonicalize explicitly so the rule holds on every architecture.
// Cvt<T> gives T's widening, its round-to-nearest-even cast and its bit reinterpretation.
template <typename T>
struct Cvt;

template <>
struct Cvt<__half> {
    __device__ static float widen(__half x) { return __half2float(x); }
    __device__ static __half round(float f) { return __float2half_rn(f); }
    __device__ static __half fromBits(unsigned short u) { return __ushort_as_half(u); }
};

template <>
struct Cvt<__nv_bfloat16> {
    __device__ static float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
    __device__ static __nv_bfloat16 round(float f) { return __float2bfloat16_rn(f); }
    __device__ static __nv_bfloat16 fromBits(unsigned short u) { return __ushort_as_bfloat16(u); }
};

template <typename T>
struct TypeOps {
    __device__ static float toFloat(T x) { return Cvt<T>::widen(x); }
    __device__ static T fromFloat(float f) {
        if (f != f) {
            return Cvt<T>::fromBits(static_cast<unsigned short>(0x7FFFu));
        }
        return Cvt<T>::round(f);
    }
};

// Raw 16-bit patterns of T (pool copies are bit-unmodified; zeros are +0.0 = 0x0000).
template <typename T>
__device__ __forceinline__ float bitsToFloat(uint16_t bits) {
    T v;
    *reinterpret_cast<uint16_t*>(&v) = bits;
    return TypeOps<T>::toFloat(v);
}

template <typename T>
__device__ __forceinline__ uint16_t floatToBits(float f) {
    T v = TypeOps<T>::fromFloat(f);
    return *reinterpret_cast<uint16_t*>(&v);
}

// relu(x) = x > 0 ? x : +0.0 (NaN and -0.0 become +0.0).
__device__ __forceinline__ float reluPos(float x) {
    float r = x > 0.0f ? x : 0.0f;
    if (QSA_MUTANT(17)) {
        r = x < 0.0f ? 0.0f : x; // NaN and -0.0 pass through
    }
    return r;
}

__device__ __forceinline__ float logitScale() {
    return __uint_as_float(kLogitScaleBits);
}

// warpSum: for m in 16, 8, 4, 2, 1: p[l] = p[l] + p[l ^ m]. Every lane ends with the same bits.
__device__ __forceinline__ float warpSum(float p) {
    float s = p;
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
        s = __fadd_rn(s, __shfl_xor_sync(kFull, s, m));
    }
    if (QSA_MUTANT(3)) {
        s = p; // the other association: m = 1, 2, 4, 8, 16
        for (int m = 1; m <= 16; m <<= 1) {
            s = __fadd_rn(s, __shfl_xor_sync(kFull, s, m));
        }
    }
    return s;
}

// K2/B2 per-lane partial of one head's dot: +0.0, then one fma per dim, the lane's dims in ascending order
// (`reversed`: from the lane's last dim, which only the K2/B2 mutants 14 and 32 ask for).
__device__ __forceinline__ float lanePartial(float4 q, float4 k, bool reversed = false) {
    float const qd[4] = {q.x, q.y, q.z, q.w};
    float const kd[4] = {k.x, k.y, k.z, k.w};
    float p = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        int const d = reversed ? 3 - i : i;
        p = fmaf(qd[d], kd[d], p);
    }
    return p;
}

// The leaf of step j of butterflyFold: j's 4 bits reversed.
__device__ __forceinline__ int rev4(int j) {
    return ((j & 1) << 3) | ((j & 2) << 1) | ((j & 4) >> 1) | ((j & 8) >> 3);
}

// warpSum's butterfly evaluated by one thread that holds every lane: step j (0..15, unrolled) brings
// a = partial[l] + partial[l ^ 16] (the m = 16 level) for l = rev4(j); the levels m = 8, 4, 2, 1 are
// folded like a binary counter in pend[0..3]. After step 15, pend[3] is warpSum's result and true is returned.
__device__ __forceinline__ bool butterflyFold(float (&pend)[4], float a, int j) {
    float s = a; // the sum of the subtree completed at level i (a: m = 16, then m = 8, 4, 2, 1)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        if ((j & (1 << i)) == 0) {
            pend[i] = s; // its sibling comes later
            return false;
        }
        s = __fadd_rn(pend[i], s);
    }
    pend[3] = s;
    return true;
}

// normRope on one warp. Lane l holds sq[0..3] = x[4l + i] (for the sum of squares) and
// xo[0..3] = x[l + 32 j] (for the output dims l, l + 32, l + 64, l + 96); w likewise at l + 32 j.
// Returns the FP32 outputs o[l + 32 j] (cast to T by the caller, once).
__device__ __forceinline__ void normRopeWarp(float const sq[4], float const xo[4], float const wo[4], float rmsEps,
                                             float cosv, float sinv, float out[4]) {
    // 1. partial[l] = +0.0; partial[l] = fma(x[4l+i], x[4l+i], partial[l]) for i = 0..3.
    float partial = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        partial = fmaf(sq[i], sq[i], partial);
    }
    // 2. s = warpSum(partial); v = fma(s, 1/128, rmsEps).
    float const s = warpSum(partial);
    float const v = fmaf(s, 0.0078125f, rmsEps);
    // 3. correctly rounded 1/sqrt.
    float inv = __frsqrt_rn(v);
#if defined(QSA_FAST_MATH)
    inv = rsqrtf(v); // //kernels:qsa_kernels_fast: section 9.1 F3 allows 1/sqrt within eps_r = 2^-21 (rsqrt.approx)
#endif
    if (QSA_MUTANT(4)) {
        inv = rsqrtf(v); // approximate
    }
    // 4. y[d] = (x[d] * inv) * (1 + w[d]), three roundings.
    float y[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        y[j] = __fmul_rn(__fmul_rn(xo[j], inv), __fadd_rn(1.0f, wo[j]));
        if (QSA_MUTANT(2)) {
            y[j] = __fmul_rn(xo[j], __fmul_rn(inv, __fadd_rn(1.0f, wo[j]))); // other association
        }
    }
    // 5. neox rope over dims [0, 64): o[i] = fma(y[i], c, -(y[i+32] s)); o[i+32] = fma(y[i+32], c, y[i] s).
    out[0] = fmaf(y[0], cosv, -__fmul_rn(y[1], sinv));
    out[1] = fmaf(y[1], cosv, __fmul_rn(y[0], sinv));
    if (QSA_MUTANT(5)) { // no fma: two more roundings
        out[0] = __fsub_rn(__fmul_rn(y[0], cosv), __fmul_rn(y[1], sinv));
        out[1] = __fadd_rn(__fmul_rn(y[1], cosv), __fmul_rn(y[0], sinv));
    } else if (QSA_MUTANT(6)) { // the rotation's sign flipped
        out[0] = fmaf(y[0], cosv, __fmul_rn(y[1], sinv));
        out[1] = fmaf(y[1], cosv, -__fmul_rn(y[0], sinv));
    }
    out[2] = y[2];
    out[3] = y[3];
    if (QSA_MUTANT(7)) {
        out[0] = fmaf(y[0], cosv, -__fmul_rn(y[2], sinv));
        out[1] = y[1];
        out[2] = fmaf(y[2], cosv, __fmul_rn(y[0], sinv));
    }
}

// ---------------------------------------------------------------------------------------------
// Paged pool (contract section 3)
// ---------------------------------------------------------------------------------------------

struct PoolDev {
    uint16_t* pool;
    int32_t const* pageTable;
    int32_t maxPagesPerSeq;
    int32_t numPages;
    int32_t numKVHeads;
    int32_t poolHeadDim;
    int32_t headSize;
};

inline PoolDev toPoolDev(QsaIndexerPoolState const& p) {
    return PoolDev{static_cast<uint16_t*>(p.poolPtr),
                   p.pageTable,
                   p.maxPagesPerSeq,
                   p.numPages,
                   p.numKVHeads,
                   p.poolHeadDim,
                   p.headSize};
}

// Element offset of the indexer tail (head 0, column headSize) of `token` of sequence b in plane
// 0 (K ids in [0, numPages)) or 1 (V ids in [numPages, 2 numPages)); -1 when the entry is a hole,
// outside its plane, or the slot is >= maxPagesPerSeq (never dereferenced then).
__device__ __forceinline__ int64_t poolTailOffset(PoolDev const& p, int64_t b, int plane, int64_t token) {
    if (token < 0) {
        return -1;
    }
    int64_t const slot = token >> 7;
    if (slot >= p.maxPagesPerSeq) {
        return -1;
    }
    int32_t page = p.pageTable[(b * 2 + plane) * p.maxPagesPerSeq + slot];
    if (QSA_MUTANT(27) && plane == 1) {
        page += p.numPages; // V ids read as if relative to the V plane
    }
    int64_t const lo = plane == 0 ? 0 : static_cast<int64_t>(p.numPages);
    bool outside = page < lo || page >= lo + p.numPages; // holes (-1) and the other plane's ids
    if (QSA_MUTANT(28)) {
        outside = page >= lo + p.numPages; // lower bound dropped
    } else if (QSA_MUTANT(36)) {
        outside = page < lo; // upper bound dropped
    }
    if (outside) {
        return -1;
    }
    return ((static_cast<int64_t>(page) * kQSA_TOKENS_PER_PAGE + (token & 127)) * p.numKVHeads) * p.poolHeadDim +
           p.headSize;
}

__device__ __forceinline__ int clampCtx(int32_t ctx, int64_t hi) {
    return static_cast<int>(ctx < 0 ? 0 : (ctx > hi ? hi : ctx));
}

// ---------------------------------------------------------------------------------------------
// Host-side checks (contract section 2)
// ---------------------------------------------------------------------------------------------

template <typename... Args>
[[noreturn]] inline void fail(char const* fn, Args const&... parts) {
    std::ostringstream os;
    os << fn << ": ";
    (os << ... << parts);
    throw std::runtime_error(os.str());
}

inline void requirePtr(char const* fn, char const* name, void const* p) {
    if (p == nullptr) {
        fail(fn, name, " is null");
    }
}

inline void requirePositive(char const* fn, char const* name, int64_t v) {
    if (v <= 0) {
        fail(fn, name, " must be > 0, got ", v);
    }
}

inline void requireNonNegative(char const* fn, char const* name, int64_t v) {
    if (v < 0) {
        fail(fn, name, " must be >= 0, got ", v);
    }
}

inline void checkPoolState(char const* fn, QsaIndexerPoolState const& p) {
    requirePtr(fn, "poolState.poolPtr", p.poolPtr);
    requirePtr(fn, "poolState.pageTable", p.pageTable);
    if (p.numPages <= 0) {
        fail(fn, "poolState.numPages must be > 0, got ", p.numPages);
    }
    if (p.numKVHeads <= 0) {
        fail(fn, "poolState.numKVHeads must be > 0, got ", p.numKVHeads);
    }
    if (p.headSize <= 0) {
        fail(fn, "poolState.headSize must be > 0, got ", p.headSize);
    }
    if (static_cast<int64_t>(p.headSize) + kDim > p.poolHeadDim) {
        fail(fn, "poolState.headSize + 128 must be <= poolState.poolHeadDim, got headSize ", p.headSize,
             " and poolHeadDim ", p.poolHeadDim);
    }
    if (p.maxPagesPerSeq <= 0) {
        fail(fn, "poolState.maxPagesPerSeq must be > 0, got ", p.maxPagesPerSeq);
    }
}

// A stage's output and its normRope inputs (K1a, K1b, B1 and both runners), checked in this order.
inline void requireNormRopePtrs(char const* fn, char const* outName, void const* out, void const* indexQk,
                                void const* cosSin, void const* contextLengths, char const* gammaName,
                                void const* gamma) {
    requirePtr(fn, outName, out);
    requirePtr(fn, "indexQk", indexQk);
    requirePtr(fn, "cosSin", cosSin);
    requirePtr(fn, "contextLengths", contextLengths);
    requirePtr(fn, gammaName, gamma);
}

// A decode stage's [batchSize, maxBlocks] geometry, both > 0 (B1, B2, B3).
inline void requireDecodeShape(char const* fn, int64_t batchSize, int64_t maxBlocks) {
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "maxBlocks", maxBlocks);
}

// A decode stage's pool, then its geometry (B1, B2).
inline void checkDecodeGeometry(char const* fn, QsaIndexerPoolState const& p, int64_t batchSize, int64_t maxBlocks) {
    checkPoolState(fn, p);
    requireDecodeShape(fn, batchSize, maxBlocks);
}

// batchSize, seqLen > 0 and the rows [rowBegin, rowEnd) inside the batchSize * seqLen rows (K2, K4).
inline void checkRowRange(char const* fn, int64_t batchSize, int64_t seqLen, int64_t rowBegin, int64_t rowEnd) {
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, "seqLen", seqLen);
    int64_t const rows = batchSize * seqLen;
    if (rowBegin < 0 || rowBegin > rowEnd || rowEnd > rows) {
        fail(fn, "need 0 <= rowBegin <= rowEnd <= batchSize * seqLen, got rowBegin ", rowBegin, ", rowEnd ", rowEnd,
             ", batchSize * seqLen ", rows);
    }
}

// Programmatic dependent launch (sm_90 and newer). A kernel started by launchAfterPrevious (below) may be
// scheduled while the kernel before it in the stream is still running; waitForPrevious(), its first
// statement, returns only once that kernel has completed with its writes visible, so the stream order that
// contract section 5's pipelines rely on (B1 -> B2 -> B3) is unchanged and only the launch latency overlaps.
// allowNextToStart() lets the next such kernel be scheduled before this one ends. Both are no-ops on older
// GPUs, where launchAfterPrevious is an ordinary launch.
__device__ __forceinline__ void waitForPrevious() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allowNextToStart() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// An attribute of the current device, queried once per device (each attribute keeps its own cache); 0 when
// a query fails, whose error is cleared so that no later launch check reports it.
template <cudaDeviceAttr kAttr>
inline int cachedDeviceAttribute() {
    static int cached[64] = {}; // value + 1; 0: not queried yet
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        (void)cudaGetLastError();
        return 0;
    }
    int known = __atomic_load_n(&cached[dev], __ATOMIC_RELAXED);
    if (known == 0) {
        int v = 0;
        if (cudaDeviceGetAttribute(&v, kAttr, dev) != cudaSuccess) {
            (void)cudaGetLastError();
            v = 0;
        }
        known = v + 1;
        __atomic_store_n(&cached[dev], known, __ATOMIC_RELAXED);
    }
    return known - 1;
}

// Programmatic dependent launch needs compute capability 9.0.
inline bool deviceHasPdl() {
    return cachedDeviceAttribute<cudaDevAttrComputeCapabilityMajor>() >= 9;
}

// Launches kernel<<<grid, block, 0, stream>>>(args...) with programmatic stream serialization where the device
// has it (and clusterX CTAs per cluster when clusterX > 1); a failed launch throws, naming the launcher.
template <typename... KernelArgs, typename... Args>
void launchAfterPrevious(char const* fn, void (*kernel)(KernelArgs...), dim3 grid, dim3 block, cudaStream_t stream,
                         unsigned clusterX, Args&&... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (clusterX > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = clusterX;
        attr[n].val.clusterDim.y = 1;
        attr[n].val.clusterDim.z = 1;
        ++n;
    }
    if (deviceHasPdl()) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n].val.programmaticStreamSerializationAllowed = 1;
        ++n;
    }
    cfg.attrs = attr;
    cfg.numAttrs = n;
    cudaError_t const e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // the error is reported here, not by a later launch
        fail(fn, "launch failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
    }
}

// A failed launch (bad configuration, sticky error) throws, naming the launcher.
inline void checkLaunch(char const* fn) {
    cudaError_t const e = cudaGetLastError();
    if (e != cudaSuccess) {
        fail(fn, "launch failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
    }
}

inline int64_t ceilDiv(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

inline size_t alignUp128(size_t x) {
    return (x + 127) & ~static_cast<size_t>(127);
}

// CTAs for `items` work items at `perCta` per CTA, at most maxGrid: the kernels loop with a grid stride.
inline int gridFor(int64_t items, int64_t perCta, int64_t maxGrid = int64_t{1} << 30) {
    int64_t const g = ceilDiv(items, perCta);
    return static_cast<int>(g < maxGrid ? g : maxGrid);
}

// Grid dimension y/z limit: kernels loop over larger ranges with a grid stride.
constexpr int64_t kMaxGridY = 65535;

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

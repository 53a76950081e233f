// A CPU execution model of CUDA's SIMT, for kernel tests on machines without a GPU (CI): a kernel source,
// compiled by the host compiler after this header, runs every thread of a block as a fiber on the calling thread,
// blocks one after another. Fibers switch only at synchronisation points, each running as far as it can, so a
// missing barrier usually shows as a wrong value, but the memory model is not checked (compute-sanitizer on the GPU
// does).
// - Arithmetic: the _rn add, subtract, multiply and fmaf are the host's IEEE binary32 operations (x86-64 SSE, no
//   flush to zero): the same bits as the device's. __frsqrt_rn is the reference's correctly rounded 1/sqrt
//   (kernels/simt_rsqrt.cc). Approximations (rsqrtf, fast-math intrinsics) abort.
//   Half and bf16 conversions are cuda_fp16.h's and cuda_bf16.h's own host code.
// - Supported: 1-D..3-D grids and blocks, static __shared__ (one instance per kernel) and dynamic shared memory,
//   both poisoned with 0xCD when a block first reaches them and followed by a guard checked at the block's end,
//   __syncthreads, __syncwarp and the *_sync warp collectives with the full mask of a warp whose 32 lanes are all
//   alive, atomics, __byte_perm, cudaLaunchKernelEx (programmatic dependent launch is plain stream order here). Not:
//   thread-block clusters (a cluster launch fails; simt_runtime.cc reports no cluster support, so launchers take their
//   cluster-free kernels), CUB, graphs.
// - Misuse is reported (std::runtime_error naming the block and threads) instead of hanging: a warp collective
//   that not every lane of its warp reaches, lanes at different collectives, a __syncthreads that some live
//   thread never reaches.
//
// Launches: simt_launch.pl rewrites `kernel<<<grid, block, smem, stream>>>(args)` into
// `::simt::launcher(grid, block, smem, stream)(&kernel)(args)` and `extern __shared__ T name[];` into a pointer to
// the launch's dynamic shared memory; nothing else of the source changes. testing/simt_runtime.cc gives the
// runtime calls of launchers and tests on host memory (cudaMalloc is an allocation, streams finish at once).
#pragma once

#include <cuda_runtime.h> // the vector types, dim3 and the runtime declarations the kernels name

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <utility>

#undef __shared__
// One block runs at a time, so a static local is that block's shared memory. Kernel sources never reach this
// macro: simt_launch.pl rewrites each of their __shared__ declarations into a poisoned, guarded SharedVar.
#define __shared__ static
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

namespace simt {

// Runs body() for every thread of every block (grid x block, blocks in order); returns when all are done.
// dynamicSmemBytes: the launch's extern __shared__ size (dynamicSmem() during the launch).
void run(dim3 grid, dim3 block, size_t dynamicSmemBytes, std::function<void()> const& body);
void* dynamicSmem();
// A static __shared__ variable as simt_launch.pl declares it (`__shared__ T name[n];` becomes a static
// SharedVar<T[n]> and a reference `name` to its v, through staticSmem): the variable, then a guard.
constexpr size_t kSharedGuard = 16384;
template <typename T>
struct SharedVar {
    T v;
    unsigned char guard[kSharedGuard];
};
// The first thread of a block to reach the declaration poisons the variable and its guard (0xCD), so that no
// block sees the previous block's values; the end of the block checks the guard (a write past the variable's end
// is an error naming it).
void sharedVar(void* p, size_t bytes, char const* name);
template <typename T>
T& staticSmem(SharedVar<T>& s, char const* name) {
    sharedVar(&s, sizeof(T), name);
    return s.v;
}
// simt_runtime.cc: throws when a launch wrote into the poisoned guard behind a device buffer.
void checkGuards();
// The offset of the first byte of [g, g + n) that is no longer the poison 0xCD; n when none (every guard's check).
size_t firstUnpoisoned(unsigned char const* g, size_t n);

// The warp collective primitive: every lane of the calling warp contributes v; returns all 32 values. `op`
// names the collective (lanes must agree on it); mask must be 0xFFFFFFFF.
void warpExchange(char const* op, unsigned mask, uint64_t v, uint64_t out[32]);
void syncThreads();
int laneId();

template <typename... A>
struct BoundLaunch {
    dim3 grid, block;
    size_t smem;
    void (*kernel)(A...);
    template <typename... B>
    void operator()(B&&... args) const {
        std::tuple<A...> const t(std::forward<B>(args)...); // converted once, as the launch copies them
        auto const k = kernel;
        run(grid, block, smem, [&t, k] { std::apply(k, t); });
    }
};

struct Launcher {
    dim3 grid, block;
    size_t smem;
    template <typename... A>
    BoundLaunch<A...> operator()(void (*kernel)(A...)) const {
        return {grid, block, smem, kernel};
    }
};

inline Launcher launcher(dim3 grid, dim3 block, size_t dynamicSmem = 0, cudaStream_t = nullptr) {
    return {grid, block, dynamicSmem};
}

template <typename T>
T shfl(char const* op, unsigned mask, T v, int src) {
    static_assert(sizeof(T) <= 8, "warp collectives on at most 64-bit values");
    uint64_t in = 0, all[32];
    std::memcpy(&in, &v, sizeof(T));
    warpExchange(op, mask, in, all);
    int const l = laneId();
    uint64_t const pick = src >= 0 && src < 32 ? all[src] : all[l];
    T out;
    std::memcpy(&out, &pick, sizeof(T));
    return out;
}

} // namespace simt

// cuda_runtime.h's typed overloads exist for nvcc only.
template <class T>
cudaError_t cudaFuncSetAttribute(T* entry, cudaFuncAttribute attr, int value) {
    return ::cudaFuncSetAttribute(reinterpret_cast<void const*>(entry), attr, value);
}
// cudaLaunchKernelEx (programmatic dependent launch: stream order is all simt has, so the attribute changes
// nothing). Clusters are not emulated: a cluster launch fails, and the launchers, which ask the device for
// cudaDevAttrClusterLaunch first (simt_runtime.cc reports none), take their cluster-free kernels.
// cuda_runtime.h's own template packs the arguments for cudaLaunchKernelExC (types erased): the macro below
// sends the kernel sources' calls here instead.
namespace simt {
template <typename... ExpTypes, typename... ActTypes>
cudaError_t launchKernelEx(cudaLaunchConfig_t const* cfg, void (*kernel)(ExpTypes...), ActTypes&&... args) {
    for (unsigned i = 0; i < cfg->numAttrs; ++i) {
        if (cfg->attrs[i].id == cudaLaunchAttributeClusterDimension &&
            cfg->attrs[i].val.clusterDim.x * cfg->attrs[i].val.clusterDim.y * cfg->attrs[i].val.clusterDim.z > 1) {
            return cudaErrorNotSupported;
        }
    }
    ::simt::launcher(cfg->gridDim, cfg->blockDim, cfg->dynamicSmemBytes,
                     cfg->stream)(kernel)(std::forward<ActTypes>(args)...);
    return cudaSuccess;
}
} // namespace simt
#define cudaLaunchKernelEx(...) ::simt::launchKernelEx(__VA_ARGS__)
// The symbol overload: a mutants build (kernels/qsaMutants.h) calls it.
template <class T>
cudaError_t cudaMemcpyToSymbolAsync(T const& symbol, void const* src, size_t count, size_t offset = 0,
                                    cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t stream = nullptr) {
    return ::cudaMemcpyToSymbolAsync(static_cast<void const*>(&symbol), src, count, offset, kind, stream);
}

// The built-in variables: plain globals that the scheduler sets to the running fiber's values before it
// switches to it (fibers switch only through the scheduler, so each sees its own).
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

inline void __syncthreads() {
    ::simt::syncThreads();
}
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
    uint64_t all[32];
    ::simt::warpExchange("__syncwarp", mask, 0, all);
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    int const l = ::simt::laneId();
    return ::simt::shfl("__shfl_sync", mask, v, (l & ~(width - 1)) + (src & (width - 1)));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    int const l = ::simt::laneId();
    int const s = l - static_cast<int>(d);
    return ::simt::shfl("__shfl_up_sync", mask, v, (s & ~(width - 1)) == (l & ~(width - 1)) ? s : l);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    int const l = ::simt::laneId();
    int const s = l ^ m;
    return ::simt::shfl("__shfl_xor_sync", mask, v, (s & ~(width - 1)) == (l & ~(width - 1)) ? s : l);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    uint64_t all[32];
    ::simt::warpExchange("__ballot_sync", mask, pred != 0, all);
    unsigned b = 0;
    for (int i = 0; i < 32; ++i) {
        b |= static_cast<unsigned>(all[i] != 0) << i;
    }
    return b;
}
template <typename T>
unsigned __match_any_sync(unsigned mask, T v) {
    uint64_t in = 0, all[32];
    std::memcpy(&in, &v, sizeof(T));
    ::simt::warpExchange("__match_any_sync", mask, in, all);
    unsigned b = 0;
    for (int i = 0; i < 32; ++i) {
        b |= static_cast<unsigned>(all[i] == in) << i;
    }
    return b;
}

// The correctly rounded float operations: the host's IEEE binary32 arithmetic in round-to-nearest-even without
// flush to zero gives the same bits as the device's _rn intrinsics (x86-64 SSE; fmaf is glibc's correctly
// rounded fma). Approximations (rsqrtf, fast-math intrinsics) are not emulated: they abort.
inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __fsub_rn(float a, float b) {
    return a - b;
}
inline float __fmul_rn(float a, float b) {
    return a * b;
}
// The correctly rounded 1/sqrt, with the device's special values (NaN -> itself, +-0 -> +-inf, negative -> NaN,
// +inf -> +0): defined by kernels/simt_rsqrt.cc as the reference's (testing/ depends on no reference).
float __frsqrt_rn(float x);
[[noreturn]] void notEmulated(char const* what);
inline float rsqrtf(float) {
    notEmulated("rsqrtf");
}

// Integer and bit-pattern intrinsics (exact on any machine).
inline int __popc(unsigned x) {
    return __builtin_popcount(x);
}
inline int __ffs(int x) {
    return __builtin_ffs(x);
}
inline unsigned __float_as_uint(float f) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
// PTX prmt in its default mode: byte n of the result is byte (s >> 4n) & 7 of {y:x}, sign-replicated when
// bit 3 of that selector nibble is set.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    uint64_t const both = (uint64_t{y} << 32) | x;
    unsigned r = 0;
    for (int n = 0; n < 4; ++n) {
        unsigned const sel = (s >> (4 * n)) & 15u;
        unsigned b = static_cast<unsigned>(both >> (8 * (sel & 7u))) & 0xFFu;
        if (sel & 8u) {
            b = (b & 0x80u) ? 0xFFu : 0u;
        }
        r |= b << (8 * n);
    }
    return r;
}
// CUDA's integer min and max, one pair per type (the overloads of the device's, no template).
#define SIMT_MIN_MAX(T)                                                                                                \
    inline T min(T a, T b) {                                                                                           \
        return a < b ? a : b;                                                                                          \
    }                                                                                                                  \
    inline T max(T a, T b) {                                                                                           \
        return a > b ? a : b;                                                                                          \
    }
SIMT_MIN_MAX(int)
SIMT_MIN_MAX(unsigned)
SIMT_MIN_MAX(long)
#undef SIMT_MIN_MAX
// Fibers run one at a time, so an atomic is a read-modify-write with no interleaving.
namespace simt {
template <typename T, typename F>
T readModifyWrite(T* p, F f) {
    T const old = *p;
    *p = f(old);
    return old;
}
} // namespace simt
template <typename T>
T atomicAdd(T* p, T v) {
    return ::simt::readModifyWrite(p, [v](T o) { return o + v; });
}
template <typename T>
T __ldg(T const* p) {
    return *p;
}

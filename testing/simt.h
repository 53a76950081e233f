// A CPU execution model of CUDA's SIMT for kernel LOGIC tests on machines without a GPU (CI): a kernel source,
// compiled by the host compiler after this header, runs every thread of a block as a fiber (ucontext) on the
// calling thread, blocks one after another. Fibers switch only at synchronisation points, so a race that the
// hardware could expose never shows here: this checks what a kernel computes (indices, counts, tie-breaks,
// warp-synchronous protocols, divergent barriers), not the memory model (compute-sanitizer on the GPU does) and
// not the device's arithmetic (no rounding intrinsic is emulated: only integer and bit-pattern code belongs
// here). Supported: 1-D..3-D grids and blocks, static __shared__ (one instance per kernel, reused block after
// block; dynamic shared memory), __syncthreads, __syncwarp and the *_sync warp collectives with the full mask of a warp
// whose 32 lanes are all alive, shared/global atomics on int/unsigned. A warp collective that not every lane of its
// warp reaches, lanes at different collectives, or a __syncthreads that some live thread never reaches is
// reported (std::runtime_error naming the block and threads) instead of hanging.
//
// Launches: simt_launch.pl rewrites `kernel<<<grid, block, smem, stream>>>(args)` into
// `::simt::launcher(grid, block, smem, stream)(&kernel)(args)` and `extern __shared__ T name[];` into a pointer to
// the launch's dynamic shared memory (poisoned with 0xCD before each block); nothing else of the source changes.
// testing/simt_runtime.cc gives the runtime calls of launchers and tests on host memory.
#pragma once

#include <cuda_runtime.h> // the vector types, dim3 and the runtime declarations the kernels name

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <utility>

#undef __shared__
#define __shared__ static // one block runs at a time: a static local is that block's shared memory
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

namespace simt {

// Runs body() for every thread of every block (grid x block, blocks in order); returns when all are done.
// dynamicSmemBytes: the launch's extern __shared__ size (dynamicSmem() during the launch).
void run(dim3 grid, dim3 block, size_t dynamicSmemBytes, std::function<void()> const& body);
void* dynamicSmem();

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
constexpr int warpSize = 32;

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
T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    int const l = ::simt::laneId();
    int const s = l + static_cast<int>(d);
    return ::simt::shfl("__shfl_down_sync", mask, v, (s & ~(width - 1)) == (l & ~(width - 1)) ? s : l);
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
inline int __any_sync(unsigned mask, int pred) {
    return __ballot_sync(mask, pred) != 0;
}
inline int __all_sync(unsigned mask, int pred) {
    return __ballot_sync(mask, pred) == mask;
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
// rounded fma). Approximations (rsqrtf, __frsqrt_rn, fast-math intrinsics) are not emulated: they abort.
inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __fsub_rn(float a, float b) {
    return a - b;
}
inline float __fmul_rn(float a, float b) {
    return a * b;
}
inline float __fmaf_rn(float a, float b, float c) {
    return std::fma(a, b, c);
}
[[noreturn]] void notEmulated(char const* what);
inline float __frsqrt_rn(float) {
    notEmulated("__frsqrt_rn");
}
inline float rsqrtf(float) {
    notEmulated("rsqrtf");
}

// Integer and bit-pattern intrinsics (exact on any machine).
inline int __popc(unsigned x) {
    return __builtin_popcount(x);
}
inline int __popcll(unsigned long long x) {
    return __builtin_popcountll(x);
}
inline int __ffs(int x) {
    return __builtin_ffs(x);
}
inline int __ffsll(long long x) {
    return __builtin_ffsll(x);
}
inline int __clz(int x) {
    return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x));
}
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) {
        r |= ((x >> i) & 1u) << (31 - i);
    }
    return r;
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
inline int __float_as_int(float f) {
    int u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float __int_as_float(int u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline int min(int a, int b) {
    return a < b ? a : b;
}
inline int max(int a, int b) {
    return a > b ? a : b;
}
inline unsigned min(unsigned a, unsigned b) {
    return a < b ? a : b;
}
inline unsigned max(unsigned a, unsigned b) {
    return a > b ? a : b;
}
inline long long min(long long a, long long b) {
    return a < b ? a : b;
}
inline long long max(long long a, long long b) {
    return a > b ? a : b;
}
inline long min(long a, long b) {
    return a < b ? a : b;
}
inline long max(long a, long b) {
    return a > b ? a : b;
}
inline unsigned long long min(unsigned long long a, unsigned long long b) {
    return a < b ? a : b;
}
inline unsigned long long max(unsigned long long a, unsigned long long b) {
    return a > b ? a : b;
}
// Fibers run one at a time, so an atomic is a read-modify-write with no interleaving.
template <typename T>
T atomicAdd(T* p, T v) {
    T const old = *p;
    *p = old + v;
    return old;
}
template <typename T>
T atomicMax(T* p, T v) {
    T const old = *p;
    *p = old > v ? old : v;
    return old;
}
template <typename T>
T atomicMin(T* p, T v) {
    T const old = *p;
    *p = old < v ? old : v;
    return old;
}
template <typename T>
T atomicOr(T* p, T v) {
    T const old = *p;
    *p = old | v;
    return old;
}
template <typename T>
T atomicExch(T* p, T v) {
    T const old = *p;
    *p = v;
    return old;
}
template <typename T>
T atomicCAS(T* p, T cmp, T v) {
    T const old = *p;
    if (old == cmp) {
        *p = v;
    }
    return old;
}
inline void __threadfence() {}
inline void __threadfence_block() {}
template <typename T>
T __ldg(T const* p) {
    return *p;
}

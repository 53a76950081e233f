// The part of the CUDA runtime API that kernel tests and launchers call, on host memory, for testing/simt.h:
// "device" memory is host memory (cudaMalloc is an aligned allocation, copies are memcpy), streams and events
// are names (every launch has finished when it returns), and the device reports an H200's limits. A test built
// on it runs its kernels through simt and its host code unchanged. Anything else of the runtime is not here,
// so a test that needs it does not link.
#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "testing/block_cache.h"
#include "testing/simt.h"

namespace {
std::map<void*, std::pair<size_t, size_t>>& live() { // (the request rounded to 256 bytes, the block's capacity)
    static std::map<void*, std::pair<size_t, size_t>> m;
    return m;
}
size_t guardBytes(size_t rounded) {
    return std::min<size_t>(rounded, size_t{16} << 20);
}
} // namespace

namespace simt {

// After every launch: a guard byte that is no longer 0xCD was written by the kernel past the end of its buffer.
void checkGuards() {
    for (auto const& [p, sizes] : live()) {
        size_t const rounded = sizes.first;
        auto* g = static_cast<unsigned char*>(p) + rounded;
        size_t const n = guardBytes(rounded);
        size_t const i = firstUnpoisoned(g, n);
        if (i < n) {
            std::memset(g, 0xCD, n); // report once
            throw std::runtime_error("simt: the kernel wrote past the end of a device buffer of " +
                                     std::to_string(rounded) + " bytes (first at byte " + std::to_string(rounded + i) +
                                     " of it)");
        }
    }
}

} // namespace simt

extern "C" {

cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}
char const* cudaGetErrorName(cudaError_t e) {
    return e == cudaSuccess ? "cudaSuccess" : "cudaErrorSimt";
}
char const* cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error (simt)" : "simt: not supported";
}
cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
// An H200's values for the attributes the launchers read.
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int) {
    switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
        *value = 232448;
        return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
        *value = 132;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
        *value = 9;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
        *value = 0;
        return cudaSuccess;
    default:
        return cudaErrorInvalidValue;
    }
}
cudaError_t cudaFuncSetAttribute(void const*, enum cudaFuncAttribute, int) {
    return cudaSuccess;
}
// Blocks from testing/block_cache.h (freed ones handed out again: kernel tests allocate the same large outIdx
// buffers case after case, and fresh memory costs a page fault per page touched). Like cudaMalloc's, the memory is
// not initialised: every block, fresh or reused, holds the 0xCD poison. Behind every block lies a guard of
// min(size, 16 MiB) poisoned with 0xCD on every allocation: a kernel that reads past its buffer (a pool page id past
// both planes, mutant 36) gets values no reference gives (0xCDCD is -23.2 in half, -4.3e8 in bf16), where fresh
// memory would give zeros, which look like the +0.0 of a rejected page.
cudaError_t cudaMalloc(void** p, size_t bytes) {
    size_t const rounded = (bytes + 255) / 256 * 256; // cudaMalloc's 256-byte alignment
    size_t const poisoned = rounded + guardBytes(rounded);
    qsa::testlib::Block const b = qsa::testlib::takeBlock(poisoned + 256);
    *p = b.p;
    if (*p == nullptr) {
        return cudaErrorMemoryAllocation;
    }
    std::memset(*p, 0xCD, poisoned); // a reused block, or fresh heap memory (block_cache.cc), may hold anything
    live()[*p] = {rounded, b.cap};
    return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
    if (p == nullptr) {
        return cudaSuccess;
    }
    auto const it = live().find(p);
    if (it == live().end()) {
        return cudaErrorInvalidValue;
    }
    qsa::testlib::giveBlock({p, it->second.second});
    live().erase(it);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, void const* src, size_t bytes, enum cudaMemcpyKind) {
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
    std::memset(p, value, bytes);
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) {
    *s = nullptr;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
    return cudaStreamCreate(s);
}
cudaError_t cudaStreamDestroy(cudaStream_t) {
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    return cudaSuccess;
}
// What a mutants build (kernels/qsaMutants.h) does to put the mutant id into its __constant__, which under the
// host compiler is an ordinary global.
cudaError_t cudaMemcpyToSymbolAsync(void const* symbol, void const* src, size_t count, size_t offset,
                                    enum cudaMemcpyKind, cudaStream_t) {
    std::memcpy(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, count);
    return cudaSuccess;
}
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode*) {
    return cudaSuccess;
}

} // extern "C"

// A fake implementation library for //api:loaded_test, compiled by that test with plain g++ (as any build system
// would build a library): it exports the API of kernels/qsaIndexerRunner.h and records its arguments in outIdx
// (host memory here) so the test sees that //api:loaded forwards every argument. Each FAKE_* macro makes one
// of the faults the loader must turn into one line.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "kernels/qsaIndexerRunner.h"

#ifdef FAKE_RUNTIME_VERSION
// What a statically linked CUDA runtime exports; the loader asks it for the library's runtime version.
extern "C" cudaError_t cudaRuntimeGetVersion(int* v) {
    *v = FAKE_RUNTIME_VERSION;
    return cudaSuccess;
}
#endif

#ifdef FAKE_STATIC_MARKERS
// What nvcc's static runtime and fatbinary leave in a library whose runtime symbols are hidden.
extern "C" __attribute__((used)) char const kFakeMarkers[] =
    "libcudart_static_0123456789\0Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0";
#endif

#ifdef FAKE_NEEDS_CUDART
// cudaRuntimeGetVersion comes from the stub libcudart.so.N the test links.
static int const kTouchRuntime = [] {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
}();
#endif

#ifdef FAKE_CONSTRUCTOR_CRASHES
static int const kCrash = [] {
    raise(SIGSEGV);
    return 0;
}();
#endif

namespace trt_edgellm {
namespace kernel {

size_t getQsaIndexerWorkspaceSize(int32_t batchSize, int32_t maxSeqLen) {
#ifdef FAKE_SIZE_THROWS
    throw std::runtime_error("getQsaIndexerWorkspaceSize: fake refuses batchSize " + std::to_string(batchSize));
#endif
#ifdef FAKE_SIZE_CRASHES
    raise(SIGSEGV);
#endif
#ifdef FAKE_SIZE_HANGS
    for (;;) {
        pause();
    }
#endif
    return size_t(batchSize) * 100000 + size_t(maxSeqLen);
}

#ifndef FAKE_OMIT_DECODE_SIZE
size_t getQsaIndexerDecodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks) {
    return size_t(maxBatchSize) * 1000 + size_t(maxBlocks) + 7;
}
#endif

// outIdx[0..9]: a marker of T, then the scalar arguments and where the pointers point (as offsets from outIdx).
template <typename T>
static void record(int32_t* out, int32_t which, void const* a, void const* b, float eps, size_t bytes, int32_t n,
                   int32_t m, int32_t pages, cudaStream_t stream) {
    int32_t epsBits;
    std::memcpy(&epsBits, &eps, 4);
    out[0] = which * 10 + (std::is_same<T, __half>::value ? 1 : 2);
    out[1] = int32_t(static_cast<char const*>(a) - reinterpret_cast<char const*>(out));
    out[2] = int32_t(static_cast<char const*>(b) - reinterpret_cast<char const*>(out));
    out[3] = epsBits;
    out[4] = int32_t(bytes);
    out[5] = n;
    out[6] = m;
    out[7] = pages;
    out[8] = int32_t(reinterpret_cast<uintptr_t>(stream));
}

template <typename T>
void runQsaIndexerPrefill(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                          T const* wQ, T const* wK, float rmsEps, void* workspace, size_t workspaceBytes,
                          int32_t batchSize, int32_t seqLen, QsaIndexerPoolState const* poolState,
                          cudaStream_t stream) {
#ifdef FAKE_RUN_THROWS
    throw std::runtime_error("runQsaIndexerPrefill: workspaceBytes " + std::to_string(workspaceBytes) +
                             " is below the required 4096");
#endif
    (void)cosSin, (void)contextLengths, (void)wK, (void)workspace;
    record<T>(outIdx, 1, indexQk, wQ, rmsEps, workspaceBytes, batchSize, seqLen,
              poolState != nullptr ? poolState->numPages : -1, stream);
}

template <typename T>
void runQsaIndexerDecode(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                         T const* wQ, T const* wK, float rmsEps, QsaIndexerPoolState const& poolState,
                         int32_t* splitCounters, void* workspace, size_t workspaceBytes, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t stream) {
    (void)cosSin, (void)contextLengths, (void)wQ, (void)workspace;
    record<T>(outIdx, 2, indexQk, wK, rmsEps, workspaceBytes, batchSize, maxBlocks, poolState.numPages, stream);
    outIdx[9] = int32_t(reinterpret_cast<char const*>(splitCounters) - reinterpret_cast<char const*>(outIdx));
}

// The four instantiations, their signatures taken from the templates above (the header's).
template decltype(runQsaIndexerPrefill<__half>) runQsaIndexerPrefill<__half>;
template decltype(runQsaIndexerPrefill<__nv_bfloat16>) runQsaIndexerPrefill<__nv_bfloat16>;
template decltype(runQsaIndexerDecode<__half>) runQsaIndexerDecode<__half>;
#ifndef FAKE_OMIT_DECODE_BF16
template decltype(runQsaIndexerDecode<__nv_bfloat16>) runQsaIndexerDecode<__nv_bfloat16>;
#endif

} // namespace kernel
} // namespace trt_edgellm

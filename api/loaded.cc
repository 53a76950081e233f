// //api:loaded: the public API of contract section 2, resolved at run time from the shared library named by
// QSA_IMPL_LIB (certify and qsa_gpu set it from --impl-lib). Built with --//api:impl=//api:loaded, the portable
// suite certifies a library from any build system without being rebuilt (tools/kit.sh). The six definitions
// below are this executable's own: they forward every argument unchanged to the library's (the executable does
// not export them, so the library's internal calls still bind to its own definitions).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "api/impl_loader.h"
#include "kernels/qsaIndexerRunner.h"

namespace trt_edgellm {
namespace kernel {

namespace {

qsa::api::LoadedLibrary const& library() {
    static qsa::api::LoadedLibrary lib;
    static std::string error;
    static std::once_flag once;
    std::call_once(once, [] {
        char const* path = std::getenv("QSA_IMPL_LIB");
        error = qsa::api::openLibrary(path != nullptr ? path : "", lib);
    });
    if (!error.empty()) {
        throw std::runtime_error("//api:loaded: " + error);
    }
    return lib;
}

template <typename F>
F fn(qsa::api::ApiFn which) {
    return reinterpret_cast<F>(library().fn[which]);
}

template <typename T>
using PrefillFn = void (*)(int32_t*, T const*, float const*, int32_t const*, T const*, T const*, float, void*, size_t,
                           int32_t, int32_t, QsaIndexerPoolState const*, cudaStream_t);
template <typename T>
using DecodeFn = void (*)(int32_t*, T const*, float const*, int32_t const*, T const*, T const*, float,
                          QsaIndexerPoolState const&, int32_t*, void*, size_t, int32_t, int32_t, cudaStream_t);

template <typename T>
constexpr qsa::api::ApiFn kPrefill = std::is_same_v<T, __half> ? qsa::api::kPrefillHalf : qsa::api::kPrefillBf16;
template <typename T>
constexpr qsa::api::ApiFn kDecode = std::is_same_v<T, __half> ? qsa::api::kDecodeHalf : qsa::api::kDecodeBf16;

} // namespace

size_t getQsaIndexerWorkspaceSize(int32_t batchSize, int32_t maxSeqLen) {
    return fn<size_t (*)(int32_t, int32_t)>(qsa::api::kPrefillSize)(batchSize, maxSeqLen);
}

size_t getQsaIndexerDecodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks) {
    return fn<size_t (*)(int32_t, int32_t)>(qsa::api::kDecodeSize)(maxBatchSize, maxBlocks);
}

template <typename T>
void runQsaIndexerPrefill(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                          T const* wQ, T const* wK, float rmsEps, void* workspace, size_t workspaceBytes,
                          int32_t batchSize, int32_t seqLen, QsaIndexerPoolState const* poolState,
                          cudaStream_t stream) {
    fn<PrefillFn<T>>(kPrefill<T>)(outIdx, indexQk, cosSin, contextLengths, wQ, wK, rmsEps, workspace, workspaceBytes,
                                  batchSize, seqLen, poolState, stream);
}

template <typename T>
void runQsaIndexerDecode(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                         T const* wQ, T const* wK, float rmsEps, QsaIndexerPoolState const& poolState,
                         int32_t* splitCounters, void* workspace, size_t workspaceBytes, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t stream) {
    fn<DecodeFn<T>>(kDecode<T>)(outIdx, indexQk, cosSin, contextLengths, wQ, wK, rmsEps, poolState, splitCounters,
                                workspace, workspaceBytes, batchSize, maxBlocks, stream);
}

// The four instantiations, their signatures taken from the templates above (the header's).
template decltype(runQsaIndexerPrefill<__half>) runQsaIndexerPrefill<__half>;
template decltype(runQsaIndexerPrefill<__nv_bfloat16>) runQsaIndexerPrefill<__nv_bfloat16>;
template decltype(runQsaIndexerDecode<__half>) runQsaIndexerDecode<__half>;
template decltype(runQsaIndexerDecode<__nv_bfloat16>) runQsaIndexerDecode<__nv_bfloat16>;

} // namespace kernel
} // namespace trt_edgellm

// What certify needs from CUDA: the architectures this build compiled (QSA_SASS_ARCHS / QSA_PTX_ARCHS, defined by
// //bazel:cuda.bzl in every .cu it compiles, the kernels' included), the toolkit version at compile time, the
// runtime and driver versions, and the visible GPUs. Free of JSON: certify_cuda.cu includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qsa {
namespace certify {

// One visible GPU as certify sees it.
struct GpuInfo {
    int index = 0;         // index among the GPUs visible to certify
    std::string visibleId; // CUDA_VISIBLE_DEVICES value given to this GPU's children
    std::string name;
    std::string uuid; // "GPU-xxxxxxxx-..."
    std::string pciBusId;
    int major = 0;
    int minor = 0;
    uint64_t totalMemBytes = 0;
    int smCount = 0;
};

std::string compiledSassArchs(); // e.g. "80,90"
std::string compiledPtxArchs();  // e.g. "90"
int compiledCudartVersion();     // CUDART_VERSION, e.g. 13000
int runtimeVersion();            // cudaRuntimeGetVersion (0 on error)
int driverApiVersion();          // cudaDriverGetVersion (0 when no driver)

// The GPUs visible to this process, in CUDA's order. Throws std::runtime_error naming the failing call.
std::vector<GpuInfo> queryGpus();

} // namespace certify
} // namespace qsa

// What certify needs from CUDA: the architectures this build compiled (QSA_SASS_ARCHS / QSA_PTX_ARCHS, defined by
// //bazel:cuda.bzl in every .cu it compiles, the kernels' included), the toolkit version at compile time, the
// runtime and driver versions, and the visible GPUs.
#pragma once

#include <string>
#include <vector>

#include "tools/certify_gpu.h"

namespace qsa {
namespace certify {

std::string compiledSassArchs(); // e.g. "80,90"
std::string compiledPtxArchs();  // e.g. "90"
int compiledCudartVersion();     // CUDART_VERSION, e.g. 13000
int runtimeVersion();            // cudaRuntimeGetVersion (0 on error)
int driverApiVersion();          // cudaDriverGetVersion (0 when no driver)

// The GPUs visible to this process, in CUDA's order. Throws std::runtime_error naming the failing call.
std::vector<GpuInfo> queryGpus();

} // namespace certify
} // namespace qsa

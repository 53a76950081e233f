// CUDA queries of certify (see certify_cuda.h). Compiled by cuda_library so that QSA_SASS_ARCHS and
// QSA_PTX_ARCHS are the very macros the kernels were compiled with (same rule, same arch-set flag).
#include "tools/certify_cuda.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>

#ifndef QSA_SASS_ARCHS
#error "QSA_SASS_ARCHS must be defined by the cuda_library rule (//bazel:cuda.bzl)"
#endif
#ifndef QSA_PTX_ARCHS
#error "QSA_PTX_ARCHS must be defined by the cuda_library rule (//bazel:cuda.bzl)"
#endif

namespace qsa {
namespace certify {

namespace {

void check(cudaError_t e, char const* call) {
    if (e != cudaSuccess) {
        throw std::runtime_error(std::string("queryGpus: ") + call + " failed: " + cudaGetErrorName(e) + " (" +
                                 cudaGetErrorString(e) + ")");
    }
}

std::string formatUuid(cudaUUID_t const& u) {
    unsigned char const* b = reinterpret_cast<unsigned char const*>(u.bytes);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return buf;
}

} // namespace

std::string compiledSassArchs() {
    return QSA_SASS_ARCHS;
}
std::string compiledPtxArchs() {
    return QSA_PTX_ARCHS;
}
int compiledCudartVersion() {
    return CUDART_VERSION;
}

int runtimeVersion() {
    int v = 0;
    return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
}

int driverApiVersion() {
    int v = 0;
    return cudaDriverGetVersion(&v) == cudaSuccess ? v : 0;
}

std::vector<GpuInfo> queryGpus() {
    int n = 0;
    check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp p{};
        check(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties");
        GpuInfo g;
        g.index = i;
        g.name = p.name;
        g.uuid = formatUuid(p.uuid);
        char bus[32];
        std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
        g.pciBusId = bus;
        g.major = p.major;
        g.minor = p.minor;
        g.totalMemBytes = p.totalGlobalMem;
        g.smCount = p.multiProcessorCount;
        gpus.push_back(g);
    }
    return gpus;
}

} // namespace certify
} // namespace qsa

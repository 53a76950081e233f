// One visible GPU as certify sees it (kept free of JSON so that the .cu of certify can include it).
#pragma once

#include <cstdint>
#include <string>

namespace qsa {
namespace certify {

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

} // namespace certify
} // namespace qsa

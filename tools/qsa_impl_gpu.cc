#include <stdexcept>

#include "fixtures/gpu_runner.h"
#include "tools/qsa_impl.h"

namespace qsa {
namespace tools {

fixtures::Impl gpuImpl() {
    std::string why;
    if (!fixtures::gpuAvailable(&why))
        throw std::runtime_error("--impl=gpu: no usable GPU on this machine (" + why + ")");
    return fixtures::runGpuImpl;
}

} // namespace tools
} // namespace qsa

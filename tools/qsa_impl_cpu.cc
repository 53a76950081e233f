#include <stdexcept>

#include "tools/qsa_impl.h"

namespace qsa {
namespace tools {

fixtures::Impl gpuImpl() {
    throw std::runtime_error("--impl=gpu: this binary (//tools:qsa) has no GPU support; use "
                             "`bazel run //tools:qsa_gpu -- ...` on a machine with a GPU");
}

} // namespace tools
} // namespace qsa

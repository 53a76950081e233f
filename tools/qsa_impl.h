// Which implementations this build of the qsa tool has: //tools:qsa (reference only, no CUDA) or
// //tools:qsa_gpu (reference and the kernels). Defined in qsa_impl_cpu.cc / qsa_impl_gpu.cc.
#pragma once

#include "fixtures/replay.h"

namespace qsa {
namespace tools {

// The GPU implementation, or a std::runtime_error saying why it is not available.
fixtures::Impl gpuImpl();

} // namespace tools
} // namespace qsa

// Host backend of the harness: plain host memory and fake stream handles, for the reference
// implementation of the API (//oracle, or a planted copy of it) that CI runs without a GPU. No cudart is linked.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "properties/backend.h"

namespace qsa {
namespace prop {
namespace backend {

bool onGpu() {
    return false;
}

std::shared_ptr<void> alloc(size_t bytes) {
    size_t rounded = (bytes + 255) / 256 * 256;
    void* p = std::aligned_alloc(256, rounded > 0 ? rounded : 256);
    if (p == nullptr)
        throw std::runtime_error("harness_host alloc: out of memory for " + std::to_string(bytes));
    return std::shared_ptr<void>(p, std::free);
}

void upload(void* dst, void const* src, size_t bytes) {
    if (bytes > 0)
        std::memcpy(dst, src, bytes);
}

void download(void* dst, void const* src, size_t bytes) {
    if (bytes > 0)
        std::memcpy(dst, src, bytes);
}

// The host implementation runs synchronously; distinct non-null handles stand for streams 1 and 2.
cudaStream_t stream(int which) {
    return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(which));
}

void sync(cudaStream_t) {}

void fence() {}

} // namespace backend
} // namespace prop
} // namespace qsa

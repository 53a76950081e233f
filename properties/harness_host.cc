// Host backend of the harness: plain host memory and fake stream handles, for the reference
// implementation of the API (//oracle, or a planted copy of it) that CI runs without a GPU. No cudart is linked.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "properties/backend.h"
#include "testing/block_cache.h"

namespace qsa {
namespace prop {
namespace backend {

bool onGpu() {
    return false;
}

// Blocks from testing/block_cache.h: freed ones are handed out again, poisoned for ASan while cached and past the
// request's 256-byte rounding while in use, so an access after release or past the end is still reported.
std::shared_ptr<void> alloc(size_t bytes) {
    testlib::Block const b = testlib::takeBlock(std::max<size_t>((bytes + 255) / 256 * 256, 256));
    if (b.p == nullptr)
        throw std::runtime_error("harness_host alloc: out of memory for " + std::to_string(bytes));
    return std::shared_ptr<void>(b.p, [b](void*) { testlib::giveBlock(b); });
}

void upload(void* dst, void const* src, size_t bytes) {
    if (bytes > 0)
        std::memcpy(dst, src, bytes);
}

void download(void* dst, void const* src, size_t bytes) {
    upload(dst, src, bytes); // host memory both ways
}

// The host implementation runs synchronously; distinct non-null handles stand for streams 1 and 2.
cudaStream_t stream(int which) {
    return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(which));
}

void sync(cudaStream_t) {}

void fence() {}

void holdStream(cudaStream_t, int) {}

void copyOnStream(void* dst, void const* src, size_t bytes, cudaStream_t) {
    upload(dst, src, bytes);
}

} // namespace backend
} // namespace prop
} // namespace qsa

// Host backend of the harness: plain host memory and fake stream handles, for the reference
// implementation of the API (//oracle, or a planted copy of it) that CI runs without a GPU. No cudart is linked.
#include <sanitizer/asan_interface.h> // ASAN_POISON_MEMORY_REGION: no-ops without -fsanitize=address

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "properties/backend.h"

namespace qsa {
namespace prop {
namespace backend {

bool onGpu() {
    return false;
}

namespace {

// Freed blocks, handed out again: ASan's allocator maps and unmaps every large block itself (heap_kept.cc does
// not reach it), so under the sanitizers each case paid a page fault per 4 KiB of its tens of MB. A block serves
// a request of at least half its size. While cached, and past the request's 256-byte rounding while in use, it
// is poisoned for ASan, so an access after release or past the end is still reported (no-ops elsewhere).
struct Cached {
    size_t cap;
    void* p;
};
constexpr size_t kCacheBytes = size_t(1) << 30;
std::mutex gCacheMutex;
std::vector<Cached> gCache;
size_t gCachedBytes = 0;

void release(void* p, size_t cap) {
    std::lock_guard<std::mutex> lock(gCacheMutex);
    ASAN_POISON_MEMORY_REGION(p, cap);
    gCache.push_back({cap, p});
    gCachedBytes += cap;
    while (gCachedBytes > kCacheBytes) { // the oldest go back to the allocator
        ASAN_UNPOISON_MEMORY_REGION(gCache.front().p, gCache.front().cap);
        std::free(gCache.front().p);
        gCachedBytes -= gCache.front().cap;
        gCache.erase(gCache.begin());
    }
}

} // namespace

std::shared_ptr<void> alloc(size_t bytes) {
    size_t const rounded = std::max<size_t>((bytes + 255) / 256 * 256, 256);
    void* p = nullptr;
    size_t cap = rounded;
    {
        std::lock_guard<std::mutex> lock(gCacheMutex);
        auto best = gCache.end();
        for (auto it = gCache.begin(); it != gCache.end(); ++it) {
            if (it->cap >= rounded && it->cap / 2 <= rounded && (best == gCache.end() || it->cap < best->cap))
                best = it;
        }
        if (best != gCache.end()) {
            p = best->p;
            cap = best->cap;
            gCachedBytes -= cap;
            gCache.erase(best);
            ASAN_UNPOISON_MEMORY_REGION(p, rounded);
        }
    }
    if (p == nullptr)
        p = std::aligned_alloc(256, rounded);
    if (p == nullptr)
        throw std::runtime_error("harness_host alloc: out of memory for " + std::to_string(bytes));
    return std::shared_ptr<void>(p, [cap](void* q) { release(q, cap); });
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

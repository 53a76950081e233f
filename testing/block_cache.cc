// glibc serves blocks of tens of MB with mmap/munmap, so every case paid a page fault and a page clear per 4 KiB,
// over half the time of those tests (perf: Differential.PrefillMatchesReference 36 s -> 12 s for its 100 cases;
// README "Timings"): a static initializer keeps freed memory on the heap, so later cases reuse warm pages. ASan's
// allocator replaces glibc's and maps every large block itself: there the cache below does it, its blocks poisoned
// while cached and past the request (no-ops without -fsanitize=address).
#include "testing/block_cache.h"

#include <malloc.h>
#include <sanitizer/asan_interface.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace qsa {
namespace testlib {
namespace {

bool const kHeapKept = [] {
    mallopt(M_MMAP_MAX, 0);        // no block from mmap: every allocation from the heap
    mallopt(M_TRIM_THRESHOLD, -1); // and the heap never handed back
    return true;
}();

std::mutex gMutex;
std::vector<Block> gCache;
size_t gCachedBytes = 0;

} // namespace

Block takeBlock(size_t bytes) {
    std::lock_guard<std::mutex> lock(gMutex);
    auto best = gCache.end();
    for (auto it = gCache.begin(); it != gCache.end(); ++it) {
        if (it->cap >= bytes && it->cap / 2 <= bytes && (best == gCache.end() || it->cap < best->cap))
            best = it;
    }
    if (best == gCache.end())
        return {std::aligned_alloc(256, bytes), bytes};
    Block const b = *best;
    gCachedBytes -= b.cap;
    gCache.erase(best);
    ASAN_UNPOISON_MEMORY_REGION(b.p, bytes);
    return b;
}

void giveBlock(Block b) {
    std::lock_guard<std::mutex> lock(gMutex);
    ASAN_POISON_MEMORY_REGION(b.p, b.cap);
    gCache.push_back(b);
    for (gCachedBytes += b.cap; gCachedBytes > (size_t(1) << 30); gCache.erase(gCache.begin())) {
        ASAN_UNPOISON_MEMORY_REGION(gCache.front().p, gCache.front().cap); // the oldest go back to the allocator
        std::free(gCache.front().p);
        gCachedBytes -= gCache.front().cap;
    }
}

} // namespace testlib
} // namespace qsa

// Host blocks for the CPU tests that allocate tens of MB per case (the properties' host harness, simt's cudaMalloc).
#pragma once

#include <cstddef>

namespace qsa {
namespace testlib {

struct Block {
    void* p; // 256-aligned; nullptr when out of memory
    size_t cap;
};
// At least `bytes` (a multiple of 256): the smallest cached block of at most twice that, else a fresh one. Under
// ASan its first `bytes` are addressable, the rest poisoned. It holds anything: callers fill what they hand over.
Block takeBlock(size_t bytes);
// Back to the cache, poisoned for ASan (a use after release is reported); past 1 GiB the oldest are freed.
void giveBlock(Block b);

} // namespace testlib
} // namespace qsa

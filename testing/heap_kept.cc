// Linked into the CPU test binaries that allocate tens of MB per case (the host harness of the properties,
// simt): a static initializer that keeps freed memory on the heap. glibc serves blocks that large with
// mmap/munmap, so every case paid a page fault and a page clear per 4 KiB: over half the time of those tests
// (perf: Differential.PrefillMatchesReference 36 s -> 12 s for its 100 cases; README "Timings"). With the heap
// kept, later cases reuse warm pages. Code under test never sees what a reused block held: the harness uploads
// or poisons every buffer it hands over, and simt's cudaMalloc poisons every block. ASan's allocator replaces
// glibc's there and ignores this.
#include <malloc.h>

namespace {

bool const kHeapKept = [] {
    mallopt(M_MMAP_MAX, 0);        // no block from mmap: every allocation from the heap
    mallopt(M_TRIM_THRESHOLD, -1); // and the heap never handed back
    return true;
}();

} // namespace

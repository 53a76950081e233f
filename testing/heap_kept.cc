// Linked into the CPU test binaries (the host harness of the properties, simt): a static initializer that keeps
// freed memory on the heap. Their cases allocate and free buffers of tens of MB each (workspaces, pools, the
// oracle's scores, a simt test's device arrays); glibc serves those with mmap/munmap, so every case paid a page
// fault and a page clear per 4 KiB: 60-85% of the time of those tests (perf: Differential.PrefillMatchesReference
// 36 s -> 13 s, expand_simt_test 5.1 s -> 3.1 s after the fiber change in simt.cc). With the heap kept, later cases
// reuse warm pages. The harness and the simt tests fill every buffer they hand to code under test before it runs
// (upload, poison pattern), so reused memory changes no result. ASan's allocator replaces glibc's and ignores this.
#include <malloc.h>

namespace {

bool const kHeapKept = [] {
    mallopt(M_MMAP_MAX, 0);        // no block from mmap: every allocation from the heap
    mallopt(M_TRIM_THRESHOLD, -1); // and the heap never handed back
    return true;
}();

} // namespace

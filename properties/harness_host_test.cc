// The host backend's block cache (harness_host.cc over testing/block_cache.h): a freed block is handed out again, and
// under ASan the bytes past a request's rounding and a released block stay poisoned, so an overrun or a use after
// release by the implementation under test is still reported (the sanitizer step of .ci/run runs this file under ASan).
#include <gtest/gtest.h>

#include "properties/backend.h"

namespace qsa {
namespace prop {
namespace {

void* freedBlockOf(size_t bytes) {
    return backend::alloc(bytes).get(); // released to the cache at once
}

TEST(HarnessHost, FreedBlockServesASmallerRequest) {
    void* const first = freedBlockOf(1000);            // 1024 bytes after rounding
    std::shared_ptr<void> again = backend::alloc(600); // 768 after rounding, at least half of 1024
    EXPECT_EQ(again.get(), first);
    static_cast<char*>(again.get())[767] = 1;            // the request's own bytes are usable
    std::shared_ptr<void> larger = backend::alloc(4000); // a block too small is never handed out
    EXPECT_NE(larger.get(), first);
}

// Poisoning exists only under ASan: these two are compiled there alone (the --config=sanitize step of .ci/run),
// not skipped elsewhere.
#if defined(__SANITIZE_ADDRESS__)
TEST(HarnessHost, OverrunOfAReusedBlockIsReported) {
    void* const first = freedBlockOf(1000);
    std::shared_ptr<void> again = backend::alloc(600);
    ASSERT_EQ(again.get(), first);
    EXPECT_DEATH(static_cast<char volatile*>(again.get())[768] = 1, "use-after-poison");
}

TEST(HarnessHost, UseAfterReleaseIsReported) {
    char volatile* const p = static_cast<char volatile*>(freedBlockOf(4096));
    EXPECT_DEATH(p[0] = 1, "use-after-poison");
}
#endif

} // namespace
} // namespace prop
} // namespace qsa

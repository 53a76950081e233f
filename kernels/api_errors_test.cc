// Argument validation of the public API that needs a device (contract section 2): valid calls of both runners
// succeed, and the checks whose sizes come from CUB's query (the prefill workspace, the sort's temp bytes)
// throw std::runtime_error naming the function, the argument and both numbers. Every check that needs no
// device is //kernels:host_api_test's (CPU, runs in CI).
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

constexpr int32_t kB = 2, kS = 9, kMaxBlocks = 8;

// A pool of 4 pages, 2 KV heads, every page-table entry a hole.
struct Fixture : RunnerBufs {
    Fixture() : RunnerBufs(kB, kS, kMaxBlocks, {9, 5}, {4, 1, 2, 384, 256}, std::vector<int32_t>(kB * 2, -1)) {}
};

TEST(ApiErrors, Prefill) {
    Fixture f;
    char const* fn = "runQsaIndexerPrefill";
    ASSERT_NO_THROW(kn::getQsaIndexerWorkspaceSize(1, 1));
    ASSERT_NO_THROW(f.prefill(f.wsBytes, kS, nullptr));
    ASSERT_NO_THROW(f.prefill(f.wsBytes, kS, &f.pool));
    QSA_CUDA(cudaDeviceSynchronize());
    size_t const need = f.wsBytes;
    expectThrows("workspace undersized", [&] { f.prefill(need - 1, kS, nullptr); },
                 {fn, "workspace", std::to_string(need - 1), std::to_string(need)});
    expectThrows("workspace 0 bytes", [&] { f.prefill(0, kS, nullptr); }, {fn, "workspace"});
    // The size needed depends on (B, S): a workspace for S = 9 does not serve S = 4096.
    size_t const need2 = kn::getQsaIndexerWorkspaceSize(kB, 4096);
    expectThrows("workspace for a smaller S", [&] { f.prefill(need, 4096, nullptr); },
                 {fn, "workspace", std::to_string(need), std::to_string(need2)});
}

TEST(ApiErrors, Decode) {
    Fixture f;
    ASSERT_NO_THROW(f.decode(f.split.get()));
    ASSERT_NO_THROW(f.decode(nullptr)); // splitCounters is optional
    QSA_CUDA(cudaDeviceSynchronize());
}

TEST(ApiErrors, LaunchersValidateToo) {
    // The sort's temp bytes come from CUB's query; the launchers' other checks are host_api_test's.
    Fixture f;
    expectThrows("launchQsaSortRows small temp",
                 [&] {
                     kn::launchQsaSortRows(f.cs.get(), f.cs.get() + 64, f.ctx.get(), f.split.get(), 1, 2, f.ws.get(), 0,
                                           nullptr);
                 },
                 {"launchQsaSortRows"});
}

} // namespace
} // namespace ktest
} // namespace qsa

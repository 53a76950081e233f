// The "failed launch" error path of both runners (contract section 2): with the test hook of
// kernels/qsaTestHooks.h set, the first launch of each runner gets an invalid configuration
// (blockDim.x > 1024); the runner must throw std::runtime_error naming the public function and the
// CUDA error, and the device must stay usable (the error is not sticky): a normal run right after
// succeeds. Not run under compute-sanitizer (the invalid launch is an API error there by design).
#include <string>

#include "kernels/qsaTestHooks.h"
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

namespace hook = kn::qsa_test;

constexpr int32_t kB = 2, kS = 40, kMaxBlocks = 16;

struct Bufs : RunnerBufs {
    // Page table [B, 2, 1]: sequence 0 K 0, V 2; sequence 1 K 1, V 3 (numPages 2, one KV head).
    Bufs() : RunnerBufs(kB, kS, kMaxBlocks, {40, 13}, {2, 1, 1, 384, 256}, {0, 2, 1, 3}) {}
    void prefill() { RunnerBufs::prefill(wsBytes, kS, &pool); }
    void decode() { RunnerBufs::decode(split.get()); }
};

// fn() must throw a std::runtime_error whose message names `function` and the invalid configuration.
void expectLaunchFailure(char const* function, std::function<void()> const& fn) {
    std::string msg;
    try {
        hook::ScopedInvalidLaunch invalid;
        fn();
    } catch (std::runtime_error const& e) {
        msg = e.what();
    }
    ASSERT_FALSE(msg.empty()) << function << " did not throw on an invalid launch configuration";
    EXPECT_EQ(msg.rfind(std::string(function) + ": ", 0), 0u) << "message does not start with the function: " << msg;
    EXPECT_NE(msg.find("launch failed"), std::string::npos) << msg;
    // The CUDA error is named; which one a driver reports for blockDim.x > 1024 differs (the H200 with
    // driver 580 says cudaErrorInvalidValue, not cudaErrorInvalidConfiguration), so only its presence counts.
    EXPECT_NE(msg.find(": cudaError"), std::string::npos) << msg;
    // Not sticky: the device is usable again at once.
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(LaunchFailure, PrefillThrowsNamingTheFunction) {
    Bufs b;
    ASSERT_NO_THROW(b.prefill());
    QSA_CUDA(cudaDeviceSynchronize());
    expectLaunchFailure("runQsaIndexerPrefill", [&] { b.prefill(); });
    ASSERT_NO_THROW(b.prefill()) << "the hook is scoped: the next run is normal";
    QSA_CUDA(cudaDeviceSynchronize());
}

TEST(LaunchFailure, DecodeThrowsNamingTheFunction) {
    Bufs b;
    ASSERT_NO_THROW(b.decode());
    QSA_CUDA(cudaDeviceSynchronize());
    expectLaunchFailure("runQsaIndexerDecode", [&] { b.decode(); });
    ASSERT_NO_THROW(b.decode());
    QSA_CUDA(cudaDeviceSynchronize());
}

} // namespace
} // namespace ktest
} // namespace qsa

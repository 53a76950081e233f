// Test-only hook of the "failed launch" error path (contract section 2: the runners throw
// std::runtime_error naming the function on a failed launch). A real launch failure cannot be provoked
// through valid public arguments, so a test sets this flag and the FIRST launch of each runner
// (launchQsaQPrep for prefill, launchQsaDecodePrep for decode) is issued with blockDim.x above the
// 1024-thread limit: a genuinely invalid configuration that the CUDA runtime rejects with
// cudaErrorInvalidConfiguration (not sticky: the context stays usable). Nothing else reads the flag;
// it is 0 unless a test sets it, and costs one relaxed atomic load per launch of those two launchers.
// Only tests may include this header (kernels/launch_failure_test.cc); production code never sets it.
#pragma once

#include <atomic>

namespace trt_edgellm {
namespace kernel {
namespace qsa_test {

// One instance per process (inline function: its static is merged across translation units).
inline std::atomic<int>& invalidLaunchFlag() {
    static std::atomic<int> flag{0};
    return flag;
}

// Threads added to the hooked launches' block size: 0, or 1024 (blockDim.x > 1024 never launches).
inline unsigned invalidLaunchExtraThreads() {
    return invalidLaunchFlag().load(std::memory_order_relaxed) != 0 ? 1024u : 0u;
}

// RAII: the hooked launches fail while an instance is alive.
class ScopedInvalidLaunch {
public:
    ScopedInvalidLaunch() { invalidLaunchFlag().store(1); }
    ~ScopedInvalidLaunch() { invalidLaunchFlag().store(0); }
    ScopedInvalidLaunch(ScopedInvalidLaunch const&) = delete;
    ScopedInvalidLaunch& operator=(ScopedInvalidLaunch const&) = delete;
};

} // namespace qsa_test
} // namespace kernel
} // namespace trt_edgellm

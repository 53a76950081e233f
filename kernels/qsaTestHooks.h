// Test-only hooks. (1) The "failed launch" error path (contract section 2: the runners throw
// std::runtime_error naming the function on a failed launch). A real launch failure cannot be provoked
// through valid public arguments, so a test sets this flag and the FIRST launch of each runner
// (launchQsaQPrep for prefill, the B1+B2 launch for decode; launchQsaDecodePrep has it too) is issued with blockDim.x
// above the 1024-thread limit: a genuinely invalid configuration that the CUDA runtime rejects with
// cudaErrorInvalidConfiguration (not sticky: the context stays usable). Nothing else reads the flag;
// it is 0 unless a test sets it, and costs one relaxed atomic load per launch of those two launchers.
// (2) K2's narrow-tile path (kernels/scores.cu): on a device that cannot give a block 67,584 bytes of shared
// memory (sm_75 gives 64 KB) K2 runs CTAs of 32 blocks instead of 64; the flag makes K2 take that path on any
// device so that the H200 tests it (kernels/scores_test.cc). One relaxed atomic load per K2 launch.
// Only tests may include this header (kernels/launch_failure_test.cc, kernels/scores_test.cc,
// properties/differential_stages_test.cc); production code never sets a flag.
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

// RAII: the flag of Flag() is set while an instance is alive.
template <std::atomic<int>& (*Flag)()>
class ScopedFlag {
public:
    ScopedFlag() { Flag().store(1); }
    ~ScopedFlag() { Flag().store(0); }
    ScopedFlag(ScopedFlag const&) = delete;
    ScopedFlag& operator=(ScopedFlag const&) = delete;
};

// RAII: the hooked launches fail while an instance is alive.
using ScopedInvalidLaunch = ScopedFlag<invalidLaunchFlag>;

// K2 takes its narrow-tile path while set (see above).
inline std::atomic<int>& narrowScoresTilesFlag() {
    static std::atomic<int> flag{0};
    return flag;
}

// RAII: K2 runs its narrow tiles while an instance is alive.
using ScopedNarrowScoresTiles = ScopedFlag<narrowScoresTilesFlag>;

} // namespace qsa_test
} // namespace kernel
} // namespace trt_edgellm

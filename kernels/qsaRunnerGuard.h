// Host-side guards shared by the two public runners (contract section 2), kept apart from the runners'
// pipeline code:
// - pointer alignment: every pointer argument must have at least the natural alignment of its element
//   type (T: 2 bytes, float / int32: 4 bytes; the workspace's 128 bytes are checked by the runners).
//   The kernels need no more (the decode V-tail 16-byte loads check the pool address and fall back to
//   2-byte loads), but a pointer below natural alignment would fault on the GPU: throw instead.
// - error naming: an error raised by a stage launcher inside a runner (a failed launch, a stage limit)
//   is re-thrown with the public function's name in front, so the message names the function called.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/qsaCommon.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

inline void requireAligned(char const* fn, char const* name, void const* p, uintptr_t align) {
    if (p != nullptr && reinterpret_cast<uintptr_t>(p) % align != 0) {
        fail(fn, name, " must be ", align, "-byte aligned (natural alignment of its element type), got address ", p);
    }
}

// The pointer arguments both runners take, at their natural alignment (in this order).
inline void requireRunnerAlignment(char const* fn, void const* outIdx, void const* indexQk, void const* cosSin,
                                   void const* contextLengths, void const* wQ, void const* wK) {
    requireAligned(fn, "outIdx", outIdx, 4);
    requireAligned(fn, "indexQk", indexQk, 2);
    requireAligned(fn, "cosSin", cosSin, 4);
    requireAligned(fn, "contextLengths", contextLengths, 4);
    requireAligned(fn, "wQ", wQ, 2);
    requireAligned(fn, "wK", wK, 2);
}

// The checks both pipelines make first, in this order: outIdx, the normRope inputs, wK and the workspace
// non-null; batchSize and the second size `sizeName` (seqLen / maxBlocks) > 0; the workspace 128-byte aligned.
inline void checkRunnerArgs(char const* fn, void const* outIdx, void const* indexQk, void const* cosSin,
                            void const* contextLengths, void const* wQ, void const* wK, void const* workspace,
                            int32_t batchSize, char const* sizeName, int32_t size) {
    requireNormRopePtrs(fn, "outIdx", outIdx, indexQk, cosSin, contextLengths, "wQ", wQ);
    requirePtr(fn, "wK", wK);
    requirePtr(fn, "workspace", workspace);
    requirePositive(fn, "batchSize", batchSize);
    requirePositive(fn, sizeName, size);
    if (reinterpret_cast<uintptr_t>(workspace) % 128 != 0) {
        fail(fn, "workspace must be 128-byte aligned, got address ", workspace);
    }
}

// The workspace covers the layout's `total` bytes for (batchSize, sizeName = size).
inline void checkWorkspaceBytes(char const* fn, size_t workspaceBytes, size_t total, int32_t batchSize,
                                char const* sizeName, int32_t size) {
    if (workspaceBytes < total) {
        fail(fn, "workspaceBytes ", workspaceBytes, " is below the required ", total, " (batchSize ", batchSize, ", ",
             sizeName, " ", size, ")");
    }
}

// A runner's workspace-size query (contract section 6): both sizes > 0, named as the query's parameters,
// then the total of the runner's layout for them.
template <typename Layout>
size_t workspaceSize(char const* fn, char const* batchName, int32_t batch, char const* sizeName, int32_t size,
                     Layout (*layout)(int32_t, int32_t)) {
    requirePositive(fn, batchName, batch);
    requirePositive(fn, sizeName, size);
    return layout(batch, size).total;
}

// Runs the runner's launches; a std::runtime_error from a stage launcher gets `fn: ` in front (unless
// it already starts with it).
template <typename F>
void namedLaunches(char const* fn, F&& launches) {
    try {
        launches();
    } catch (std::runtime_error const& e) {
        std::string const msg = e.what();
        std::string const prefix = std::string(fn) + ": ";
        if (msg.compare(0, prefix.size(), prefix) == 0) {
            throw;
        }
        throw std::runtime_error(prefix + msg);
    }
}

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

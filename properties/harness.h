// The one door through which every property reaches the implementation under test: the public API of
// contract section 2 (kernels/qsaIndexerRunner.h), nothing else. Two backends are linked in by choice
// (properties/BUILD): harness_gpu.cc (device buffers, streams, the implementation behind
// //api:impl) and harness_host.cc (host buffers, the literal oracle of //oracle).
// The same property sources are compiled against either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "properties/outputs.h"
#include "reference/qsaReference.h"

namespace qsa {
namespace prop {

using ref::DecodeCase;
using ref::DType;
using ref::PrefillCase;

// What the workspace holds before a run (contract section 6: results never depend on it).
enum class Fill { kGarbage, kNaN, kZero };

struct RunOptions {
    Fill workspaceFill = Fill::kGarbage;
    uint64_t fillSeed = 1;        // garbage bytes and the outIdx canary derive from it
    int stream = 0;               // 0: the legacy default stream; 1, 2: two streams created by the harness
    size_t workspaceBytes = 0;    // bytes passed to the runner; 0: the size function's answer
    size_t workspaceMisalign = 0; // added to a 128-byte-aligned base pointer
    // Also read the stage outputs back from the workspace after the run (contract section 6, last
    // paragraph), at the offsets of the section-6 layout (ref::prefillWorkspaceLayout /
    // decodeWorkspaceLayout) and nothing else: any implementation of the API can be checked this way.
    bool readStages = false;
    // The run's inputs land only behind other work on its stream (a 20 ms host wait, then copies from staging
    // buffers over inputs uploaded as NaN), and outIdx is read from a copy enqueued on the stream right after the
    // call: work the implementation enqueues on any other stream than the one it was given (contract 7.4)
    // reads NaN inputs or misses the copy. GPU backend only; with the host backend it is an ordinary run. Use it
    // with stream 1 or 2 (the legacy default stream orders everything).
    bool behindStreamWork = false;
};

// True when the implementation under test runs on a GPU (harness_gpu.cc).
bool implOnGpu();

// outIdx is pre-filled with a canary derived from fillSeed (so an unwritten row shows), the workspace
// with o.workspaceFill; the run is synchronized before returning. Errors of the runner propagate.
PrefillOut runImplPrefill(PrefillCase const& c, RunOptions const& o = {});
DecodeOut runImplDecode(DecodeCase const& c, RunOptions const& o = {});

// Both cases enqueued, each on its own stream and workspace, before either is synchronized.
std::pair<PrefillOut, PrefillOut> runImplPrefillPair(PrefillCase const& a, PrefillCase const& b, RunOptions oa,
                                                     RunOptions ob);

size_t prefillWorkspaceSize(int32_t batchSize, int32_t maxSeqLen);
size_t decodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks);

} // namespace prop
} // namespace qsa

// CPU reference of the QSA indexer contract (../shared/CONTRACT.md), bit for bit equal to the GPU.
// Host memory only. Activations, gammas and pool contents are uint16_t bit patterns of T (half or
// bf16, chosen at run time by DType) so that fixtures and properties can hold them without CUDA types.
// Stage functions mirroring every launcher of kernels/qsaIndexerKernels.h live in reference/stages.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qsa {
namespace ref {

enum class DType { kHalf, kBf16 };

constexpr int32_t kNumHeads = 4;
constexpr int32_t kHeadDim = 128;
constexpr int32_t kBlockTopK = 512;
constexpr int32_t kIndexWidth = 2051;
constexpr int32_t kQkWidth = 640;
constexpr int32_t kTokensPerPage = 128;

// MB: the blocks of 4 tokens of a sequence of seqLen tokens, the last one partial (ceil(seqLen / 4)).
constexpr int64_t numBlocks(int64_t seqLen) {
    return (seqLen + 3) / 4;
}

// Paged pool geometry (contract section 2, QsaIndexerPoolState without the pointers).
struct PoolDims {
    int32_t numPages = 0;
    int32_t maxPagesPerSeq = 0;
    int32_t numKVHeads = 0;
    int32_t poolHeadDim = 0;
    int32_t headSize = 0;
};

// Host model of the paged pool: contents [2*numPages, 128, numKVHeads, poolHeadDim] T bits and the
// page table [B, 2, maxPagesPerSeq]. Addressing and guard rules of contract section 3.
struct HostPool {
    PoolDims dims;
    std::vector<int32_t> pageTable;
    std::vector<uint16_t> data;
};

struct PrefillCase {
    DType dtype = DType::kHalf;
    int32_t batchSize = 0;
    int32_t seqLen = 0;
    std::vector<uint16_t> indexQk;       // [B, S, 640]
    std::vector<float> cosSin;           // [P >= S, 64]
    std::vector<int32_t> contextLengths; // [B]; clamped to [0, S] as the contract's precondition says
    std::vector<uint16_t> wQ, wK;        // [128] raw gammas
    float rmsEps = 1e-6f;
    bool hasPool = false;
    HostPool pool;          // used iff hasPool; data is the pool BEFORE the run
    bool keepLogits = true; // false: PrefillResult::logits stays empty (saves B*S*MB floats)
};

struct PrefillResult {
    std::vector<int32_t> outIdx;     // [B, S, 2051]
    std::vector<uint16_t> qNormed;   // [B, S, 4, 128]
    std::vector<uint16_t> kbar;      // [B, MB, 128]
    std::vector<float> logits;       // [B*S, MB] (visible logits, -FLT_MAX elsewhere)
    std::vector<uint16_t> poolAfter; // pool contents after the run (hasPool only)
};

struct DecodeCase {
    DType dtype = DType::kHalf;
    int32_t batchSize = 0;
    int32_t maxBlocks = 0;
    std::vector<uint16_t> indexQk;       // [B, 1, 640]
    std::vector<float> cosSin;           // [P >= max ctx, 64]
    std::vector<int32_t> contextLengths; // [B], ctx includes the new token
    std::vector<uint16_t> wQ, wK;
    float rmsEps = 1e-6f;
    HostPool pool; // required; data is the pool BEFORE the step
    bool hasSplitCounters = false;
    std::vector<int32_t> splitCounters; // [B, numKVHeads] before the step
};

struct DecodeResult {
    std::vector<int32_t> outIdx;   // [B, 1, 2051]
    std::vector<uint16_t> qNormed; // [B, 1, 4, 128]
    std::vector<float> logits;     // [B, maxBlocks]: valid prefix ctx/4 per row, -FLT_MAX elsewhere
    std::vector<uint16_t> poolAfter;
    std::vector<int32_t> splitCountersAfter;
};

// Whole pipelines (contract section 5). Throw std::runtime_error on inconsistent sizes.
// numThreads <= 0 means hardware concurrency.
PrefillResult runPrefill(PrefillCase const& c, int numThreads = 0);
DecodeResult runDecode(DecodeCase const& c, int numThreads = 0);

// Row-subset entry point: outIdx rows (b * S + t) for the chosen rows only, [rows.size(), 2051], in the
// order given. A row needs only its own q and its sequence's kbar, so a long prefill is checked on
// sampled rows. Pool writes are not modelled here.
std::vector<int32_t> runPrefillRows(PrefillCase const& c, std::vector<int64_t> const& rows, int numThreads = 0);

// Workspace sizes of contract section 6, written independently of the kernels. The CUB temp slot
// needs a GPU query: cubTempBytes is passed in (the formula applies alignUp(max(query, 1 MiB))).
size_t prefillWorkspaceBytes(int32_t batchSize, int32_t maxSeqLen, size_t cubQueryBytes);
size_t decodeWorkspaceBytes(int32_t maxBatchSize, int32_t maxBlocks);
int64_t prefillChunkRows(int32_t batchSize, int32_t seqLen); // Rc

// Byte offsets of the workspace slots of contract section 6 for one run (the run's batchSize and seqLen /
// maxBlocks, not the sizes the workspace was made for): consecutive slots in the contract's order, each
// padded to 128 bytes. Through them the stage outputs of any implementation are observable after a run
// (section 6, last paragraph): prefill qNormed [B,S,4,128] T and kbar [B,MB,128] T; decode qNormed
// [B,1,4,128] T and logits [B, maxBlocks] FP32. The CUB temp slot (prefill, last) starts at cubTemp.
struct PrefillWorkspaceLayout {
    size_t qNormed = 0, kbar = 0, keys = 0, keysAlt = 0, values = 0, valuesAlt = 0, cubTemp = 0;
    size_t qNormedBytes = 0, kbarBytes = 0; // unpadded sizes of the two stage-output slots
};
PrefillWorkspaceLayout prefillWorkspaceLayout(int32_t batchSize, int32_t seqLen);
struct DecodeWorkspaceLayout {
    size_t qNormed = 0, logits = 0;
    size_t qNormedBytes = 0, logitsBytes = 0; // unpadded
};
DecodeWorkspaceLayout decodeWorkspaceLayout(int32_t batchSize, int32_t maxBlocks);

// A decode row is valid iff ctx >= 1 and ctx / 4 <= maxBlocks (floor; contract section 5).
bool decodeRowValid(int32_t ctx, int32_t maxBlocks);

} // namespace ref
} // namespace qsa

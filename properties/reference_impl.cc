// The public API of contract section 2 implemented over HOST memory by the reference stages
// (reference/stages.h), composed exactly as the GPU pipeline of section 5: the workspace slots of
// section 6, the Rc chunk loop, idsFill -> K2 -> sort -> K4 per chunk. The CPU variants of the
// properties certify this composition (it must equal qsa::ref::runPrefill / runDecode bit for bit), so
// every contract that needs no GPU runs in CI. cuda_runtime.h is included for the types only; no cudart.
//
// Planted bugs (properties/plants.h) are compiled in only with
//   --per_file_copt=properties/reference_impl.cc@-DQSA_PLANT=<n>
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/qsaIndexerRunner.h"
#include "properties/ttypes.h"
#include "reference/qsaReference.h"
#include "reference/stages.h"

#ifndef QSA_PLANT
#define QSA_PLANT 0
#endif
#include "properties/plants.h"

namespace trt_edgellm {
namespace kernel {
namespace {

using qsa::ref::DType;

template <typename T>
DType dtypeOf();
template <>
DType dtypeOf<__half>() {
    return DType::kHalf;
}
template <>
DType dtypeOf<__nv_bfloat16>() {
    return DType::kBf16;
}

[[noreturn]] void fail(char const* fn, std::string const& what) {
    throw std::runtime_error(std::string(fn) + ": " + what);
}

void requirePtr(char const* fn, void const* p, char const* name) {
    if (p == nullptr)
        fail(fn, std::string(name) + " is null");
}

void requirePositive(char const* fn, int64_t v, char const* name) {
    if (v <= 0)
        fail(fn, std::string(name) + " must be > 0, got " + std::to_string(v));
}

void requireWorkspace(char const* fn, void const* ws, size_t bytes, size_t need) {
    requirePtr(fn, ws, "workspace");
    if (reinterpret_cast<uintptr_t>(ws) % qsa::prop::plant::kWorkspaceAlign != 0) {
        fail(fn, "workspace is not 128-byte aligned");
    }
    if (bytes < need) {
        fail(fn, "workspaceBytes " + std::to_string(bytes) + " is below the required " + std::to_string(need));
    }
}

qsa::ref::PoolView poolView(char const* fn, QsaIndexerPoolState const& s) {
    requirePtr(fn, s.poolPtr, "poolState.poolPtr");
    requirePtr(fn, s.pageTable, "poolState.pageTable");
    requirePositive(fn, s.numPages, "poolState.numPages");
    requirePositive(fn, s.numKVHeads, "poolState.numKVHeads");
    requirePositive(fn, s.headSize, "poolState.headSize");
    requirePositive(fn, s.maxPagesPerSeq, "poolState.maxPagesPerSeq");
    if (int64_t(s.headSize) + 128 > s.poolHeadDim) {
        fail(fn, "poolState.headSize + 128 = " + std::to_string(int64_t(s.headSize) + 128) + " exceeds poolHeadDim " +
                     std::to_string(s.poolHeadDim));
    }
    qsa::ref::PoolView v;
    v.pool = static_cast<uint16_t*>(s.poolPtr);
    v.pageTable = s.pageTable;
    v.dims.numPages = s.numPages;
    v.dims.maxPagesPerSeq = s.maxPagesPerSeq;
    v.dims.numKVHeads = s.numKVHeads;
    v.dims.poolHeadDim = s.poolHeadDim;
    v.dims.headSize = s.headSize;
    return v;
}

size_t alignUp(size_t v) {
    return (v + 127) / 128 * 128;
}

// Hands out consecutive 128-byte-padded slots of the workspace (section 6 order).
class Slots {
public:
    explicit Slots(void* base) : p_(static_cast<char*>(base)) {}
    template <typename E>
    E* take(size_t n) {
        E* r = reinterpret_cast<E*>(p_);
        p_ += alignUp(n * sizeof(E));
        return r;
    }

private:
    char* p_;
};

} // namespace

size_t getQsaIndexerWorkspaceSize(int32_t batchSize, int32_t maxSeqLen) {
    requirePositive("getQsaIndexerWorkspaceSize", batchSize, "batchSize");
    requirePositive("getQsaIndexerWorkspaceSize", maxSeqLen, "maxSeqLen");
    // No CUB here: the sort slot is the formula's 1 MiB floor (a query of 0 bytes).
    return qsa::ref::prefillWorkspaceBytes(batchSize, maxSeqLen, 0);
}

size_t getQsaIndexerDecodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks) {
    requirePositive("getQsaIndexerDecodeWorkspaceSize", maxBatchSize, "maxBatchSize");
    requirePositive("getQsaIndexerDecodeWorkspaceSize", maxBlocks, "maxBlocks");
    return qsa::ref::decodeWorkspaceBytes(maxBatchSize, maxBlocks);
}

template <typename T>
void runQsaIndexerPrefill(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                          T const* wQ, T const* wK, float rmsEps, void* workspace, size_t workspaceBytes,
                          int32_t batchSize, int32_t seqLen, QsaIndexerPoolState const* poolState,
                          cudaStream_t /*stream*/) {
    char const* fn = "runQsaIndexerPrefill";
    requirePtr(fn, outIdx, "outIdx");
    requirePtr(fn, indexQk, "indexQk");
    requirePtr(fn, cosSin, "cosSin");
    requirePtr(fn, contextLengths, "contextLengths");
    requirePtr(fn, wQ, "wQ");
    requirePtr(fn, wK, "wK");
    requirePositive(fn, batchSize, "batchSize");
    requirePositive(fn, seqLen, "seqLen");
    requireWorkspace(fn, workspace, workspaceBytes, getQsaIndexerWorkspaceSize(batchSize, seqLen));
    qsa::ref::PoolView pool{};
    if (poolState != nullptr)
        pool = poolView(fn, *poolState);

    DType const dt = dtypeOf<T>();
    auto const* qk = reinterpret_cast<uint16_t const*>(indexQk);
    auto const* wq = reinterpret_cast<uint16_t const*>(wQ);
    auto const* wk = reinterpret_cast<uint16_t const*>(wK);
    int32_t const B = batchSize, S = seqLen, MB = (S + 3) / 4;
    int64_t const rows = int64_t(B) * S;
    size_t const pairs = size_t(std::min<int64_t>(rows * MB, std::max<int64_t>(8388608, 256 * int64_t(MB))));

    Slots slots(workspace);
    auto* qNormed = slots.take<uint16_t>(size_t(rows) * 4 * 128);
    auto* kbar = slots.take<uint16_t>(size_t(B) * MB * 128);
    auto* keys = slots.take<float>(pairs);
    auto* keysAlt = slots.take<float>(pairs);
    auto* values = slots.take<int32_t>(pairs);
    auto* valuesAlt = slots.take<int32_t>(pairs);

    std::vector<uint16_t> const qBefore = qsa::prop::plant::snapshot(12, qNormed, size_t(rows) * 512);
    qsa::ref::qPrep(dt, qNormed, qk, cosSin, contextLengths, wq, rmsEps, B, S);
    qsa::prop::plant::afterQPrep(qNormed, qBefore, contextLengths, B, S);
    std::vector<uint16_t> const kbarBefore = qsa::prop::plant::snapshot(13, kbar, size_t(B) * MB * 128);
    if (poolState != nullptr) {
        qsa::ref::kCompressPaged(dt, kbar, qk, cosSin, contextLengths, wk, rmsEps, B, S, MB, 0, MB, 0, pool);
        qsa::ref::rawKTailScatter(dt, qk, contextLengths, B, S, pool);
        qsa::prop::plant::afterRawKTailScatter(qk, contextLengths, B, S, pool);
    } else {
        qsa::ref::kCompress(dt, kbar, qk, cosSin, contextLengths, wk, rmsEps, B, S, MB, 0, MB, 0);
    }
    qsa::prop::plant::afterKCompress(kbar, kbarBefore, contextLengths, B, S);
    int64_t const rc = qsa::ref::prefillChunkRows(B, S);
    for (int64_t r0 = 0; r0 < rows; r0 += rc) {
        int32_t const r1 = int32_t(std::min(rows, r0 + rc));
        int32_t const n = r1 - int32_t(r0);
        qsa::ref::idsFill(values, n, MB);
        qsa::prop::plant::scores(dt, keys, qNormed, kbar, contextLengths, B, S, int32_t(r0), r1);
        qsa::ref::sortRows(keys, keysAlt, values, valuesAlt, n, MB);
        qsa::prop::plant::expand(outIdx, valuesAlt, contextLengths, B, S, int32_t(r0), r1);
    }
}

template <typename T>
void runQsaIndexerDecode(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                         T const* wQ, T const* wK, float rmsEps, QsaIndexerPoolState const& poolState,
                         int32_t* splitCounters, void* workspace, size_t workspaceBytes, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t /*stream*/) {
    char const* fn = "runQsaIndexerDecode";
    requirePtr(fn, outIdx, "outIdx");
    requirePtr(fn, indexQk, "indexQk");
    requirePtr(fn, cosSin, "cosSin");
    requirePtr(fn, contextLengths, "contextLengths");
    requirePtr(fn, wQ, "wQ");
    requirePtr(fn, wK, "wK");
    requirePositive(fn, batchSize, "batchSize");
    requirePositive(fn, maxBlocks, "maxBlocks");
    requireWorkspace(fn, workspace, workspaceBytes, getQsaIndexerDecodeWorkspaceSize(batchSize, maxBlocks));
    qsa::ref::PoolView pool = poolView(fn, poolState);

    DType const dt = dtypeOf<T>();
    Slots slots(workspace);
    auto* qNormed = slots.take<uint16_t>(size_t(batchSize) * 4 * 128);
    auto* logits = slots.take<float>(size_t(batchSize) * maxBlocks);

    qsa::prop::plant::beforeDecodePrep(contextLengths, batchSize, maxBlocks, pool);
    qsa::ref::decodePrep(dt, qNormed, reinterpret_cast<uint16_t const*>(indexQk), cosSin, contextLengths,
                         reinterpret_cast<uint16_t const*>(wQ), reinterpret_cast<uint16_t const*>(wK), rmsEps, pool,
                         batchSize, maxBlocks);
    qsa::prop::plant::afterDecodePrep(dt, qNormed, reinterpret_cast<uint16_t const*>(indexQk), cosSin, contextLengths,
                                      reinterpret_cast<uint16_t const*>(wQ), rmsEps, batchSize, maxBlocks);
    qsa::prop::plant::decodeScores(dt, logits, qNormed, contextLengths, pool, batchSize, maxBlocks);
    if (splitCounters != nullptr)
        qsa::ref::zeroSplitCounters(splitCounters, batchSize, pool.dims.numKVHeads);
    qsa::ref::decodeSelect(outIdx, logits, contextLengths, batchSize, maxBlocks);
}

template void runQsaIndexerPrefill<__half>(int32_t*, __half const*, float const*, int32_t const*, __half const*,
                                           __half const*, float, void*, size_t, int32_t, int32_t,
                                           QsaIndexerPoolState const*, cudaStream_t);
template void runQsaIndexerPrefill<__nv_bfloat16>(int32_t*, __nv_bfloat16 const*, float const*, int32_t const*,
                                                  __nv_bfloat16 const*, __nv_bfloat16 const*, float, void*, size_t,
                                                  int32_t, int32_t, QsaIndexerPoolState const*, cudaStream_t);
template void runQsaIndexerDecode<__half>(int32_t*, __half const*, float const*, int32_t const*, __half const*,
                                          __half const*, float, QsaIndexerPoolState const&, int32_t*, void*, size_t,
                                          int32_t, int32_t, cudaStream_t);
template void runQsaIndexerDecode<__nv_bfloat16>(int32_t*, __nv_bfloat16 const*, float const*, int32_t const*,
                                                 __nv_bfloat16 const*, __nv_bfloat16 const*, float,
                                                 QsaIndexerPoolState const&, int32_t*, void*, size_t, int32_t, int32_t,
                                                 cudaStream_t);

} // namespace kernel
} // namespace trt_edgellm

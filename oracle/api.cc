// The public API of CONTRACT.md section 2 over HOST memory (the "stream" is ignored: every call is
// synchronous): the argument checks of section 2, the workspace sizes and slot layout of section 6, then
// the pipelines of stages.h. The CUDA headers give the types only; no cudart is linked.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/qsaIndexerRunner.h"
#include "oracle/plants.h"
#include "oracle/stages.h"

namespace trt_edgellm {
namespace kernel {
namespace {

using qsa::oracle::Act;

template <typename T>
Act actOf();
template <>
Act actOf<__half>() {
    return Act::kHalf;
}
template <>
Act actOf<__nv_bfloat16>() {
    return Act::kBf16;
}

// Section 2 checks: each failure names the public function, the argument and the values.
class Args {
public:
    explicit Args(char const* fn) : fn_(fn) {}
    [[noreturn]] void fail(std::string const& what) const { throw std::runtime_error(fn_ + ": " + what); }
    void notNull(void const* p, char const* name) const {
        if (p == nullptr)
            fail(std::string("argument ") + name + " is null");
    }
    // What both runners check first, in the order their errors are reported: the six pointers, then the two
    // counts (batchSize and seqLen or maxBlocks).
    void runnerInputs(void const* outIdx, void const* indexQk, void const* cosSin, void const* contextLengths,
                      void const* wQ, void const* wK, int64_t batchSize, char const* countName, int64_t count) const {
        notNull(outIdx, "outIdx");
        notNull(indexQk, "indexQk");
        notNull(cosSin, "cosSin");
        notNull(contextLengths, "contextLengths");
        notNull(wQ, "wQ");
        notNull(wK, "wK");
        positive(batchSize, "batchSize");
        positive(count, countName);
    }
    void positive(int64_t v, char const* name) const {
        if (v <= 0)
            fail(std::string("argument ") + name + " = " + std::to_string(v) + " must be > 0");
    }
    // 128-byte alignment, then workspaceBytes >= the size function's answer (`sizeCall` names it).
    void workspace(void const* ws, size_t bytes, size_t need, std::string const& sizeCall) const {
        notNull(ws, "workspace");
        uintptr_t const align = qsa::oracle::kPlant == 8 ? 64 : 128; // Plant 8: modulo 64
        uintptr_t const addr = reinterpret_cast<uintptr_t>(ws);
        if (addr % align != 0) {
            fail("argument workspace (address " + std::to_string(addr) +
                 ", address % 128 = " + std::to_string(addr % 128) + ") is not 128-byte aligned");
        }
        if (bytes < need) {
            fail("argument workspaceBytes = " + std::to_string(bytes) + " is below " + sizeCall + " = " +
                 std::to_string(need));
        }
    }
    qsa::oracle::Pool pool(QsaIndexerPoolState const& s) const {
        notNull(s.poolPtr, "poolState.poolPtr");
        notNull(s.pageTable, "poolState.pageTable");
        positive(s.numPages, "poolState.numPages");
        positive(s.numKVHeads, "poolState.numKVHeads");
        positive(s.headSize, "poolState.headSize");
        if (int64_t(s.headSize) + 128 > s.poolHeadDim) {
            fail("argument poolState.headSize + 128 = " + std::to_string(int64_t(s.headSize) + 128) +
                 " exceeds poolState.poolHeadDim = " + std::to_string(s.poolHeadDim));
        }
        positive(s.maxPagesPerSeq, "poolState.maxPagesPerSeq");
        return qsa::oracle::Pool{static_cast<uint16_t*>(s.poolPtr),
                                 s.pageTable,
                                 s.maxPagesPerSeq,
                                 s.numPages,
                                 s.numKVHeads,
                                 s.poolHeadDim,
                                 s.headSize};
    }

private:
    std::string fn_;
};

// The inputs as the pipelines read them: T as its bit patterns and Act.
template <typename T>
void setInputs(qsa::oracle::Inputs& in, int32_t* outIdx, T const* indexQk, float const* cosSin,
               int32_t const* contextLengths, T const* wQ, T const* wK, float rmsEps) {
    in.act = actOf<T>();
    in.outIdx = outIdx;
    in.indexQk = reinterpret_cast<uint16_t const*>(indexQk);
    in.cosSin = cosSin;
    in.contextLengths = contextLengths;
    in.wQ = reinterpret_cast<uint16_t const*>(wQ);
    in.wK = reinterpret_cast<uint16_t const*>(wK);
    in.rmsEps = rmsEps;
}

// Byte counts in 128 bits, so that no product of int32 arguments wraps; a size_t overflow throws.
using Bytes = unsigned __int128;

Bytes padded(Bytes b) {
    return (b + 127) / 128 * 128;
}

size_t toSize(Args const& args, Bytes b) {
    if (b > std::numeric_limits<size_t>::max())
        args.fail("the workspace size does not fit in size_t");
    return size_t(b);
}

// Consecutive 128-byte-padded slots of a workspace, in the order of section 6.
class Slots {
public:
    explicit Slots(void* base) : p_(static_cast<char*>(base)) {}
    template <typename E>
    E* take(int64_t elements) {
        E* r = reinterpret_cast<E*>(p_);
        p_ += size_t(padded(Bytes(elements) * sizeof(E)));
        return r;
    }

private:
    char* p_;
};

// No CUB on the host: the CUB temp slot is its floor, alignUp(max(query, 1 MiB)) with a query of 0 bytes.
constexpr Bytes kCubTempBytes = Bytes(1) << 20;

} // namespace

size_t getQsaIndexerWorkspaceSize(int32_t batchSize, int32_t maxSeqLen) {
    Args const args("getQsaIndexerWorkspaceSize");
    args.positive(batchSize, "batchSize");
    args.positive(maxSeqLen, "maxSeqLen");
    Bytes const B = Bytes(batchSize), S = Bytes(maxSeqLen), MB = Bytes(qsa::oracle::blocksOf(maxSeqLen));
    Bytes const pairs = Bytes(qsa::oracle::sortSlotElements(batchSize, maxSeqLen));
    Bytes total = padded(B * S * 4 * 128 * 2); // qNormed [B, S, 4, 128] T
    total += padded(B * MB * 128 * 2);         // kbar [B, MB, 128] T
    total += 4 * padded(pairs * 4);            // keys, keys-alt (FP32), values, values-alt (INT32)
    total += padded(kCubTempBytes);
    return toSize(args, total);
}

size_t getQsaIndexerDecodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks) {
    Args const args("getQsaIndexerDecodeWorkspaceSize");
    args.positive(maxBatchSize, "maxBatchSize");
    args.positive(maxBlocks, "maxBlocks");
    Bytes const B = Bytes(maxBatchSize);
    return toSize(args, padded(B * 4 * 128 * 2) + padded(B * Bytes(maxBlocks) * 4)); // qNormed; logits
}

template <typename T>
void runQsaIndexerPrefill(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                          T const* wQ, T const* wK, float rmsEps, void* workspace, size_t workspaceBytes,
                          int32_t batchSize, int32_t seqLen, QsaIndexerPoolState const* poolState,
                          cudaStream_t /*stream*/) {
    Args const args("runQsaIndexerPrefill");
    args.runnerInputs(outIdx, indexQk, cosSin, contextLengths, wQ, wK, batchSize, "seqLen", seqLen);
    args.workspace(workspace, workspaceBytes, getQsaIndexerWorkspaceSize(batchSize, seqLen),
                   "getQsaIndexerWorkspaceSize(batchSize = " + std::to_string(batchSize) +
                       ", maxSeqLen = " + std::to_string(seqLen) + ")");
    qsa::oracle::Pool pool;
    if (poolState != nullptr)
        pool = args.pool(*poolState);

    qsa::oracle::FpEnvGuard const fpEnv;
    qsa::oracle::PrefillIo io;
    setInputs(io, outIdx, indexQk, cosSin, contextLengths, wQ, wK, rmsEps);
    io.B = batchSize;
    io.S = seqLen;
    io.pool = poolState != nullptr ? &pool : nullptr;

    int64_t const rows = int64_t(batchSize) * seqLen, MB = qsa::oracle::blocksOf(seqLen);
    int64_t const pairs = qsa::oracle::sortSlotElements(batchSize, seqLen);
    Slots slots(workspace);
    qsa::oracle::PrefillSlots ws;
    ws.qNormed = slots.take<uint16_t>(rows * 4 * 128);
    ws.kbar = slots.take<uint16_t>(int64_t(batchSize) * MB * 128);
    ws.keys = slots.take<float>(pairs);
    ws.keysAlt = slots.take<float>(pairs);
    ws.values = slots.take<int32_t>(pairs);
    ws.valuesAlt = slots.take<int32_t>(pairs);
    qsa::oracle::runPrefill(io, ws);
}

template <typename T>
void runQsaIndexerDecode(int32_t* outIdx, T const* indexQk, float const* cosSin, int32_t const* contextLengths,
                         T const* wQ, T const* wK, float rmsEps, QsaIndexerPoolState const& poolState,
                         int32_t* splitCounters, void* workspace, size_t workspaceBytes, int32_t batchSize,
                         int32_t maxBlocks, cudaStream_t /*stream*/) {
    Args const args("runQsaIndexerDecode");
    args.runnerInputs(outIdx, indexQk, cosSin, contextLengths, wQ, wK, batchSize, "maxBlocks", maxBlocks);
    args.workspace(workspace, workspaceBytes, getQsaIndexerDecodeWorkspaceSize(batchSize, maxBlocks),
                   "getQsaIndexerDecodeWorkspaceSize(maxBatchSize = " + std::to_string(batchSize) +
                       ", maxBlocks = " + std::to_string(maxBlocks) + ")");

    qsa::oracle::FpEnvGuard const fpEnv;
    qsa::oracle::DecodeIo io;
    setInputs(io, outIdx, indexQk, cosSin, contextLengths, wQ, wK, rmsEps);
    io.pool = args.pool(poolState);
    io.splitCounters = splitCounters; // optional
    io.B = batchSize;
    io.maxBlocks = maxBlocks;

    Slots slots(workspace);
    qsa::oracle::DecodeSlots ws;
    ws.qNormed = slots.take<uint16_t>(int64_t(batchSize) * 4 * 128);
    ws.logits = slots.take<float>(int64_t(batchSize) * maxBlocks);
    qsa::oracle::runDecode(io, ws);
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

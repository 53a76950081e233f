// Shared helpers of the GPU stage and pipeline tests (kernels/*_test.cc): device buffers (testing/),
// T <-> uint16_t bit conversions, random inputs with low-entropy modes (so that equal logits appear),
// paged pools mirrored on host and device, and bitwise comparisons that print the first mismatches
// with the case parameters. Every comparison is on bit patterns (contract section 7.1: bit for bit,
// never a tolerance).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/qsaIndexerKernels.h"
#include "kernels/qsaIndexerRunner.h"
#include "reference/numerics.h"
#include "reference/qsaReference.h"
#include "reference/stages.h"
#include "testing/bits_diff.h"
#include "testing/device_buffer.h"
#include "testing/inputs.h"
#include "testing/rng.h"

namespace qsa {
namespace ktest {

using ref::DType;
namespace kn = trt_edgellm::kernel;

// ---- device buffers and streams: testing/device_buffer.h (QSA_CUDA, DeviceBuffer, Stream) ---------------

template <typename E>
using DevBuf = testlib::DeviceBuffer<E>;
using testlib::Stream;

// ---- dtypes ------------------------------------------------------------------------------------

char const* dtName(DType dt);

template <typename E, DType D>
struct DTypeParam {
    using T = E;
    static constexpr DType kDt = D;
};
using DTypes = ::testing::Types<DTypeParam<half, DType::kHalf>, DTypeParam<__nv_bfloat16, DType::kBf16>>;
struct DTypeNames {
    template <typename P>
    static std::string GetName(int) {
        return dtName(P::kDt);
    }
};

// Declares the typed suite `Suite` of a stage or pipeline test: each TYPED_TEST(Suite, ...) runs once per
// DType, named half / bf16, with TypeParam::T (the device element type) and TypeParam::kDt.
#define QSA_DTYPE_TEST_SUITE(Suite)                                                                                    \
    template <typename P>                                                                                              \
    class Suite : public ::testing::Test {};                                                                           \
    TYPED_TEST_SUITE(Suite, ::qsa::ktest::DTypes, ::qsa::ktest::DTypeNames)

// Bits -> float, and float <-> T bits (ref::fromFloat / ref::toFloat): the reference's verified casts.
using ref::bitsFloat;
uint16_t tNaN(DType dt, int variant); // a few different NaN payloads and signs of T

// ---- random inputs -----------------------------------------------------------------------------

enum class Mode {
    kNormal,     // uniform in [-2, 2]
    kLowEntropy, // values from {0, 0.5, 1, -1}: many equal dot products, so equal logits
    kWide,       // random sign and exponent in [2^-24, 2^12]: subnormals and large values
    kSpecial,    // kNormal with ~3% +-inf, NaN, +-0, subnormals
    kPositive,   // uniform in [0, 1]: all dot products positive (relu passes), fewer zeros
};
char const* modeName(Mode m);

using Rng = testlib::Rng; // portable: a seed gives the same inputs with any standard library
std::vector<uint16_t> randomT(DType dt, size_t n, Mode m, Rng& rng);

enum class Gamma {
    kSmall,   // uniform in [-0.5, 0.5]
    kExtreme, // max finite values and -1 (1 + w = 0): products overflow to inf
    kSpecial, // some entries +-inf / NaN
};
char const* gammaName(Gamma g);
std::vector<uint16_t> makeGamma(DType dt, Gamma g, Rng& rng);

// The neox rope table [numPos, 64] of base 10000 (testing/inputs.h).
inline std::vector<float> makeCosSin(int32_t numPos) {
    return testlib::ropeTable(10000.0, numPos);
}

// Overwrites rows t >= ctx[b] of indexQk [B, S, 640] with NaN / inf patterns: those rows must never be read.
void poisonPaddedRows(DType dt, std::vector<uint16_t>& indexQk, int32_t B, int32_t S, std::vector<int32_t> const& ctx);

// ---- paged pools -------------------------------------------------------------------------------

enum class Pages {
    kFull,  // every slot of every sequence has a distinct page of its plane
    kHoles, // some slots -1, out of their plane, or out of range (never dereferenced)
};
inline char const* pagesName(Pages p) {
    return p == Pages::kHoles ? " holes" : " full";
}

// Host pool (reference/qsaReference.h) with random contents (NaN included), page table per `pages`.
ref::HostPool makeHostPool(DType dt, int32_t B, ref::PoolDims dims, Pages pages, Rng& rng);

// Device copy of a HostPool.
struct DevPool {
    explicit DevPool(ref::HostPool const& h) : dims(h.dims), data(h.data), pageTable(h.pageTable) {}
    kn::QsaIndexerPoolState state() const { return testlib::poolState(dims, data.get(), pageTable.get()); }
    ref::PoolDims dims;
    DevBuf<uint16_t> data;
    DevBuf<int32_t> pageTable;
};
ref::PoolView viewOf(ref::HostPool& h);
std::string poolParams(ref::PoolDims const& d);

// Device inputs of one prefill [B, S] and one decode [B, maxBlocks] runner call, all zeros, with a zero pool
// of `dims` and page table `pageTable`: the argument-check and launch-failure tests, which look at errors,
// not outputs.
struct RunnerBufs {
    RunnerBufs(int32_t B, int32_t S, int32_t maxBlocks, std::vector<int32_t> const& ctx, ref::PoolDims dims,
               std::vector<int32_t> const& pageTable);
    // runQsaIndexerPrefill<half> of seqLen rows with wsBytes bytes of workspace and pool state p.
    void prefill(size_t wsBytes, int32_t seqLen, kn::QsaIndexerPoolState const* p) {
        kn::runQsaIndexerPrefill<half>(out.get(), qk.as<half const>(), cs.get(), ctx.get(), wQ.as<half const>(),
                                       wK.as<half const>(), 1e-6f, ws.get(), wsBytes, B, seqLen, p, nullptr);
    }
    // runQsaIndexerDecode<half> with splitCounters (may be null).
    void decode(int32_t* splitCounters) {
        kn::runQsaIndexerDecode<half>(out.get(), qk.as<half const>(), cs.get(), ctx.get(), wQ.as<half const>(),
                                      wK.as<half const>(), 1e-6f, pool, splitCounters, dWs.get(), dWsBytes, B,
                                      maxBlocks, nullptr);
    }
    int32_t B, S, maxBlocks;
    DevBuf<uint16_t> qk;
    DevBuf<float> cs;
    DevBuf<int32_t> ctx;
    DevBuf<uint16_t> wQ, wK;
    DevBuf<int32_t> out;
    DevPool poolBufs;
    DevBuf<int32_t> split; // [B, numKVHeads]
    size_t wsBytes;        // getQsaIndexerWorkspaceSize(B, S)
    DevBuf<uint8_t> ws;
    size_t dWsBytes; // getQsaIndexerDecodeWorkspaceSize(B, maxBlocks)
    DevBuf<uint8_t> dWs;
    kn::QsaIndexerPoolState pool; // poolBufs.state()
};

// Inline (not in test_helper.cc): the runners' size functions pull the whole pipeline into a binary, so only
// the tests that use RunnerBufs link it (a stage test stays one kernel file plus its launcher).
inline RunnerBufs::RunnerBufs(int32_t B, int32_t S, int32_t maxBlocks, std::vector<int32_t> const& ctxs,
                              ref::PoolDims dims, std::vector<int32_t> const& pageTable)
    : B(B), S(S), maxBlocks(maxBlocks), qk(size_t(B) * S * ref::kQkWidth), cs(size_t(S) * 64), ctx(ctxs),
      wQ(ref::kHeadDim), wK(ref::kHeadDim), out(size_t(B) * S * ref::kIndexWidth),
      poolBufs(ref::HostPool{
          dims, pageTable,
          std::vector<uint16_t>(size_t(2) * dims.numPages * ref::kTokensPerPage * dims.numKVHeads * dims.poolHeadDim)}),
      split(size_t(B) * dims.numKVHeads), wsBytes(kn::getQsaIndexerWorkspaceSize(B, S)), ws(wsBytes),
      dWsBytes(kn::getQsaIndexerDecodeWorkspaceSize(B, maxBlocks)), dWs(dWsBytes), pool(poolBufs.state()) {
    for (auto* b : {&qk, &wQ, &wK})
        b->fillBytes(0);
    cs.fillBytes(0);
}

// Runs launch(stream) on a created stream, waits for it and checks that no launch failed.
template <typename Launch>
void onStream(Launch launch) {
    Stream st;
    launch(st.get());
    st.sync();
    QSA_CUDA(cudaGetLastError());
}

// ---- comparisons -------------------------------------------------------------------------------

// Fields in this order: the tests write {what, params, rowWidth, dt}.
struct CmpOpts {
    std::string what;    // e.g. "qNormed"
    std::string params;  // the case's parameters
    size_t rowWidth = 0; // > 0: mismatches printed as row, col
    DType dt = DType::kHalf;
};

// testlib::bitsDiffReport of actual vs expected (T elements shown with their dt value) as a gtest result.
template <typename E>
::testing::AssertionResult bitsEqual(std::vector<E> const& expected, std::vector<E> const& actual, CmpOpts const& o) {
    testlib::BitsDiffOpts b = testlib::tRowOpts(o.what, o.rowWidth, ref::toFloatOf(o.dt));
    b.params = o.params;
    b.maxPrint = 8;
    std::string const m = testlib::bitsDiffReport(actual, expected, b);
    if (m.empty())
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << m;
}

// Parameter formatting: {a,b,c}.
template <typename E>
std::string ctxStr(std::vector<E> const& v) {
    std::ostringstream os;
    os << "{";
    for (size_t i = 0; i < v.size(); ++i)
        os << (i ? "," : "") << v[i];
    os << "}";
    return os.str();
}

// names[e] of an enum class whose enumerators take the values 0, 1, ... in declaration order ("?" past the
// end): the names of the cases' modes in parameters and test names.
template <typename E, size_t N>
char const* enumName(E e, char const* const (&names)[N]) {
    size_t const i = static_cast<size_t>(e);
    return i < N ? names[i] : "?";
}

// Expects fn() to throw std::runtime_error whose message contains every string of `words`.
void expectThrows(std::string const& label, std::function<void()> const& fn, std::vector<std::string> const& words);

template <typename... A>
std::string params(A const&... a) {
    std::ostringstream os;
    (os << ... << a);
    return os.str();
}

// ---- pipeline cases ----------------------------------------------------------------------------

struct PrefillSpec {
    int32_t B = 1;
    int32_t S = 8;
    std::vector<int32_t> ctx; // size B
    uint64_t seed = 1;
    Mode qk = Mode::kNormal;
    Gamma gamma = Gamma::kSmall;
    bool poison = true; // NaN/Inf in padded rows
    float rmsEps = 1e-6f;
};
// The spec of B sequences of S rows with context lengths ctx, the other fields at their defaults but qk.
inline PrefillSpec prefillSpec(int32_t B, int32_t S, std::vector<int32_t> ctx, uint64_t seed, Mode qk = Mode::kNormal) {
    return PrefillSpec{B, S, std::move(ctx), seed, qk};
}
std::string specStr(DType dt, PrefillSpec const& s);
ref::PrefillCase makePrefillCase(DType dt, PrefillSpec const& s);

// Runs runQsaIndexerPrefill<T> on the case (its pool too when c.hasPool) with a workspace of
// getQsaIndexerWorkspaceSize(B, wsSeqLen > 0 ? wsSeqLen : S) bytes filled with `wsFill` first.
// Returns outIdx; *poolAfter gets the device pool after the run when non-null.
// `devPool` (when non-null and c.hasPool) is used, and left holding the pool after the run, instead of a
// fresh device copy of c.pool.
template <typename T>
std::vector<int32_t> gpuPrefill(ref::PrefillCase const& c, int wsFill = 0xFF, int32_t wsSeqLen = 0,
                                std::vector<uint16_t>* poolAfter = nullptr, cudaStream_t stream = nullptr,
                                DevPool* devPool = nullptr) {
    DevBuf<uint16_t> qk(c.indexQk), wQ(c.wQ), wK(c.wK);
    DevBuf<float> cs(c.cosSin);
    DevBuf<int32_t> ctx(c.contextLengths);
    DevBuf<int32_t> out(size_t(c.batchSize) * c.seqLen * ref::kIndexWidth);
    out.fillBytes(0x5A);
    size_t wsBytes = kn::getQsaIndexerWorkspaceSize(c.batchSize, wsSeqLen > 0 ? wsSeqLen : c.seqLen);
    DevBuf<uint8_t> ws(wsBytes);
    ws.fillBytes(wsFill);
    std::unique_ptr<DevPool> own;
    if (c.hasPool && devPool == nullptr) {
        own = std::make_unique<DevPool>(c.pool);
        devPool = own.get();
    }
    kn::QsaIndexerPoolState const st = c.hasPool ? devPool->state() : kn::QsaIndexerPoolState{};
    kn::runQsaIndexerPrefill<T>(out.get(), qk.as<T const>(), cs.get(), ctx.get(), wQ.as<T const>(), wK.as<T const>(),
                                c.rmsEps, ws.get(), wsBytes, c.batchSize, c.seqLen, c.hasPool ? &st : nullptr, stream);
    QSA_CUDA(cudaStreamSynchronize(stream));
    QSA_CUDA(cudaGetLastError());
    if (poolAfter != nullptr && c.hasPool)
        *poolAfter = devPool->data.download();
    return out.download();
}

} // namespace ktest
} // namespace qsa

// Every argument check of the kernels' host-side API that needs no GPU, so that CI (no GPU) runs them
// (contract section 2): each invalid argument throws std::runtime_error before anything reaches the device,
// its message naming the function and the argument (and, for an undersized workspace, both numbers); the
// decode workspace size follows the reference's section-6 formula. Pointers are never dereferenced on the
// host, so fake (non-null, aligned) addresses stand in for device buffers. What needs a device (a valid call
// succeeds, the prefill workspace size, which asks CUB) is //kernels:api_errors_test's.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/qsaIndexerKernels.h"
#include "kernels/qsaIndexerRunner.h"
#include "kernels/test_helper.h"
#include "reference/qsaReference.h"

namespace {

namespace kn = trt_edgellm::kernel;
using qsa::ktest::expectThrows;

using T = __half;
constexpr int32_t kB = 2, kS = 9, kMaxBlocks = 8;

// Fake device addresses: 128-byte aligned storage, never dereferenced.
alignas(128) unsigned char gStorage[4096];
template <typename P>
P* fake(size_t offset) {
    return reinterpret_cast<P*>(gStorage + offset);
}

// The pointer arguments both runners take first.
struct Inputs {
    int32_t* outIdx = fake<int32_t>(0);
    T const* indexQk = fake<T const>(128);
    float const* cosSin = fake<float const>(256);
    int32_t const* contextLengths = fake<int32_t const>(384);
    T const* wQ = fake<T const>(512);
    T const* wK = fake<T const>(512);
};

// A pool of 4 pages, 2 KV heads.
kn::QsaIndexerPoolState const kPool{fake<unsigned char>(2048), fake<int32_t const>(640), 1, 4, 2, 384, 256};

struct PrefillArgs : Inputs {
    void* workspace = fake<unsigned char>(1024);
    size_t workspaceBytes = size_t(1) << 20;
    int32_t batchSize = kB, seqLen = kS;
    kn::QsaIndexerPoolState const* pool = nullptr;
};

void callPrefill(PrefillArgs const& a) {
    kn::runQsaIndexerPrefill<T>(a.outIdx, a.indexQk, a.cosSin, a.contextLengths, a.wQ, a.wK, 1e-6f, a.workspace,
                                a.workspaceBytes, a.batchSize, a.seqLen, a.pool, nullptr);
}

struct DecodeArgs : Inputs {
    kn::QsaIndexerPoolState pool = kPool;
    int32_t* split = fake<int32_t>(768);
    void* workspace = fake<unsigned char>(1024);
    size_t workspaceBytes = qsa::ref::decodeWorkspaceBytes(kB, kMaxBlocks);
    int32_t batchSize = kB, maxBlocks = kMaxBlocks;
};

void callDecode(DecodeArgs const& a) {
    kn::runQsaIndexerDecode<T>(a.outIdx, a.indexQk, a.cosSin, a.contextLengths, a.wQ, a.wK, 1e-6f, a.pool, a.split,
                               a.workspace, a.workspaceBytes, a.batchSize, a.maxBlocks, nullptr);
}

// with(mut): a call of `call` on valid arguments with one argument changed by mut.
template <typename Args>
auto changedCall(void (*call)(Args const&)) {
    return [call](auto mut) {
        Args a;
        mut(a);
        return [a, call] { call(a); };
    };
}

// Invalid pool states (section 2), each with the fields the message must name.
std::vector<std::pair<std::vector<std::string>, kn::QsaIndexerPoolState>> badPools() {
    std::vector<std::pair<std::vector<std::string>, kn::QsaIndexerPoolState>> v;
    auto add = [&](std::vector<std::string> names, auto mut) {
        kn::QsaIndexerPoolState p = kPool;
        mut(p);
        v.emplace_back(names, p);
    };
    add({"poolPtr"}, [](auto& p) { p.poolPtr = nullptr; });
    add({"pageTable"}, [](auto& p) { p.pageTable = nullptr; });
    add({"numPages"}, [](auto& p) { p.numPages = 0; });
    add({"numPages"}, [](auto& p) { p.numPages = -4; });
    add({"numKVHeads"}, [](auto& p) { p.numKVHeads = 0; });
    add({"headSize"}, [](auto& p) { p.headSize = 0; });
    add({"headSize"}, [](auto& p) { p.headSize = -128; });
    add({"headSize", "poolHeadDim"}, [](auto& p) { p.headSize = 257; }); // 257 + 128 > 384
    add({"headSize", "poolHeadDim"}, [](auto& p) { p.headSize = 300; });
    add({"headSize", "poolHeadDim"}, [](auto& p) { p.poolHeadDim = 383; });
    add({"maxPagesPerSeq"}, [](auto& p) { p.maxPagesPerSeq = 0; });
    add({"maxPagesPerSeq"}, [](auto& p) { p.maxPagesPerSeq = -1; });
    return v;
}

// The checks both runners make first (contract section 2): `with(mut)` is the valid call with one argument
// changed; dim is the second size (seqLen / maxBlocks), set to 0 and `negative`; the workspace is moved by
// each of `misalign` bytes; `withPool(pool)` is the valid call with pool state `pool`.
template <typename Args, typename With, typename WithPool>
void expectSharedRunnerChecks(char const* fn, With with, char const* dimName, int32_t Args::*dim, int32_t negative,
                              std::vector<size_t> const& misalign, WithPool withPool) {
    expectThrows("outIdx null", with([](Args& a) { a.outIdx = nullptr; }), {fn, "outIdx"});
    expectThrows("indexQk null", with([](Args& a) { a.indexQk = nullptr; }), {fn, "indexQk"});
    expectThrows("cosSin null", with([](Args& a) { a.cosSin = nullptr; }), {fn, "cosSin"});
    expectThrows("contextLengths null", with([](Args& a) { a.contextLengths = nullptr; }), {fn, "contextLengths"});
    expectThrows("wQ null", with([](Args& a) { a.wQ = nullptr; }), {fn, "wQ"});
    expectThrows("wK null", with([](Args& a) { a.wK = nullptr; }), {fn, "wK"});
    expectThrows("workspace null", with([](Args& a) { a.workspace = nullptr; }), {fn, "workspace"});
    for (int32_t v : {0, negative}) {
        expectThrows("batchSize " + std::to_string(v), with([v](Args& a) { a.batchSize = v; }), {fn, "batchSize"});
        expectThrows(dimName + (" " + std::to_string(v)), with([v, dim](Args& a) { a.*dim = v; }), {fn, dimName});
    }
    for (size_t m : misalign) {
        expectThrows("workspace misaligned by " + std::to_string(m),
                     with([m](Args& a) { a.workspace = static_cast<char*>(a.workspace) + m; }),
                     {fn, "workspace", "128"});
    }
    for (auto bp : badPools()) {
        bp.first.push_back(fn);
        expectThrows("pool " + bp.first[0], withPool(bp.second), bp.first);
    }
}

TEST(HostApi, DecodeWorkspaceSizeFollowsSection6) {
    for (int32_t B : {1, 2, 3, 7, 64, 1000}) {
        for (int32_t maxBlocks : {1, 2, 31, 32, 33, 512, 513, 1001, 32768}) {
            EXPECT_EQ(kn::getQsaIndexerDecodeWorkspaceSize(B, maxBlocks), qsa::ref::decodeWorkspaceBytes(B, maxBlocks))
                << "B=" << B << " maxBlocks=" << maxBlocks;
        }
    }
}

TEST(HostApi, SizeFunctionsRejectNonPositive) {
    for (auto bs : std::vector<std::pair<int, int>>{{0, 8}, {-1, 8}, {1, 0}, {1, -5}}) {
        std::string const l = "(" + std::to_string(bs.first) + ", " + std::to_string(bs.second) + ")";
        char const* const prefillArg = bs.first < 1 ? "batchSize" : "maxSeqLen";
        char const* const decodeArg = bs.first < 1 ? "maxBatchSize" : "maxBlocks";
        expectThrows("getQsaIndexerWorkspaceSize" + l, [bs] { kn::getQsaIndexerWorkspaceSize(bs.first, bs.second); },
                     {"getQsaIndexerWorkspaceSize", prefillArg});
        expectThrows("getQsaIndexerDecodeWorkspaceSize" + l,
                     [bs] { kn::getQsaIndexerDecodeWorkspaceSize(bs.first, bs.second); },
                     {"getQsaIndexerDecodeWorkspaceSize", decodeArg});
    }
    EXPECT_NO_THROW(kn::getQsaIndexerDecodeWorkspaceSize(1, 1));
}

TEST(HostApi, DecodeRejectsBadArgumentsBeforeTheDevice) {
    char const* fn = "runQsaIndexerDecode";
    auto with = changedCall(callDecode);
    expectSharedRunnerChecks<DecodeArgs>(
        fn, with, "maxBlocks", &DecodeArgs::maxBlocks, -3, {64, 32},
        [&](kn::QsaIndexerPoolState const& bad) { return with([bad](DecodeArgs& a) { a.pool = bad; }); });
    // Undersized: the message gives both numbers.
    size_t const need = qsa::ref::decodeWorkspaceBytes(kB, kMaxBlocks);
    expectThrows("workspace undersized", with([need](auto& a) { a.workspaceBytes = need - 1; }),
                 {fn, "workspaceBytes", std::to_string(need - 1), std::to_string(need)});
    size_t const need2 = qsa::ref::decodeWorkspaceBytes(kB, 100000);
    expectThrows("workspace for fewer blocks", with([](auto& a) { a.maxBlocks = 100000; }),
                 {fn, "workspace", std::to_string(need), std::to_string(need2)});
}

TEST(HostApi, PrefillRejectsNullAndNonPositiveBeforeTheDevice) {
    char const* fn = "runQsaIndexerPrefill";
    auto with = changedCall(callPrefill);
    expectSharedRunnerChecks<PrefillArgs>(fn, with, "seqLen", &PrefillArgs::seqLen, -1, {64, 4},
                                          [&](kn::QsaIndexerPoolState const& bad) {
                                              auto p = std::make_shared<kn::QsaIndexerPoolState>(bad);
                                              return with([p](PrefillArgs& a) { a.pool = p.get(); });
                                          });
}

// Pointers below the natural alignment of their element type (T: 2 bytes, float / int32: 4) would fault on
// the GPU: each runner refuses them on the host, naming the function and the argument. The GPU test
// //kernels:alignment_test checks that naturally aligned pointers give bit-identical results.
TEST(HostApi, PointersBelowNaturalAlignmentThrowBeforeTheDevice) {
    auto off = [](auto* p, int bytes) {
        using P = decltype(p);
        return reinterpret_cast<P>(reinterpret_cast<uintptr_t>(p) + bytes);
    };
    std::vector<std::pair<char const*, DecodeArgs>> cases;
    auto add = [&](char const* name, auto mut) {
        DecodeArgs x;
        mut(x);
        cases.emplace_back(name, x);
    };
    add("outIdx", [&](DecodeArgs& x) { x.outIdx = off(x.outIdx, 2); });
    add("indexQk", [&](DecodeArgs& x) { x.indexQk = off(x.indexQk, 1); });
    add("cosSin", [&](DecodeArgs& x) { x.cosSin = off(x.cosSin, 2); });
    add("contextLengths", [&](DecodeArgs& x) { x.contextLengths = off(x.contextLengths, 2); });
    add("wQ", [&](DecodeArgs& x) { x.wQ = off(x.wQ, 1); });
    add("wK", [&](DecodeArgs& x) { x.wK = off(x.wK, 1); });
    add("poolState.poolPtr", [&](DecodeArgs& x) { x.pool.poolPtr = off(static_cast<char*>(x.pool.poolPtr), 1); });
    add("poolState.pageTable", [&](DecodeArgs& x) { x.pool.pageTable = off(x.pool.pageTable, 2); });
    add("splitCounters", [&](DecodeArgs& x) { x.split = off(x.split, 2); });
    for (auto const& [name, x] : cases) {
        expectThrows(name, [&] { callDecode(x); }, {"runQsaIndexerDecode", name, "aligned"});
        if (std::string(name) == "splitCounters")
            continue; // not an argument of prefill
        PrefillArgs p;
        static_cast<Inputs&>(p) = x;
        p.pool = &x.pool;
        expectThrows(name, [&] { callPrefill(p); }, {"runQsaIndexerPrefill", name, "aligned"});
    }
}

// qsaIndexerKernels.h: every launcher validates its host-side arguments and names itself.
TEST(HostApi, LaunchersValidateBeforeTheDevice) {
    Inputs const in;
    auto* q = fake<T>(128);
    int32_t* out = fake<int32_t>(0);
    float* logits = fake<float>(256);
    expectThrows("launchQsaQPrep null qNormed",
                 [&] { kn::launchQsaQPrep<T>(nullptr, q, in.cosSin, in.contextLengths, q, 1e-6f, kB, kS, nullptr); },
                 {"launchQsaQPrep", "qNormed"});
    expectThrows("launchQsaQPrep seqLen 0",
                 [&] { kn::launchQsaQPrep<T>(q, q, in.cosSin, in.contextLengths, q, 1e-6f, kB, 0, nullptr); },
                 {"launchQsaQPrep", "seqLen"});
    expectThrows("launchQsaDecodeSelect maxBlocks 0",
                 [&] { kn::launchQsaDecodeSelect(out, logits, in.contextLengths, kB, 0, nullptr); },
                 {"launchQsaDecodeSelect", "maxBlocks"});
    expectThrows("launchQsaDecodeScores bad pool",
                 [&] {
                     kn::QsaIndexerPoolState p = kPool;
                     p.numKVHeads = 0;
                     kn::launchQsaDecodeScores<T>(logits, q, in.contextLengths, p, kB, kMaxBlocks, nullptr);
                 },
                 {"launchQsaDecodeScores", "numKVHeads"});
}

} // namespace

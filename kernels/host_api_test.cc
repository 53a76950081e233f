// The kernels' host-side API that needs no GPU, so that CI (no GPU) runs a real test of this package:
// the decode workspace size against the reference's section-6 formula, and the section-2 argument
// checks that throw before anything reaches the device. Pointers are never dereferenced on the host, so
// fake (non-null, aligned) addresses stand in for device buffers.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/qsaIndexerRunner.h"
#include "reference/qsaReference.h"

namespace {

namespace kn = trt_edgellm::kernel;

using Half = __half;

template <typename Fn>
std::string thrownMessage(Fn&& fn) {
    try {
        fn();
    } catch (std::runtime_error const& e) {
        return e.what();
    }
    return "<nothing thrown>";
}

void expectMentions(std::string const& msg, std::initializer_list<char const*> words) {
    for (char const* w : words) {
        EXPECT_NE(msg.find(w), std::string::npos) << "message lacks '" << w << "': " << msg;
    }
}

TEST(HostApi, DecodeWorkspaceSizeFollowsSection6) {
    for (int32_t B : {1, 2, 3, 7, 64, 1000}) {
        for (int32_t maxBlocks : {1, 2, 31, 32, 33, 512, 32768}) {
            EXPECT_EQ(kn::getQsaIndexerDecodeWorkspaceSize(B, maxBlocks), qsa::ref::decodeWorkspaceBytes(B, maxBlocks))
                << "B=" << B << " maxBlocks=" << maxBlocks;
        }
    }
}

TEST(HostApi, SizeFunctionsRejectNonPositive) {
    expectMentions(thrownMessage([] { kn::getQsaIndexerDecodeWorkspaceSize(0, 4); }),
                   {"getQsaIndexerDecodeWorkspaceSize", "maxBatchSize"});
    expectMentions(thrownMessage([] { kn::getQsaIndexerDecodeWorkspaceSize(2, -1); }),
                   {"getQsaIndexerDecodeWorkspaceSize", "maxBlocks"});
    expectMentions(thrownMessage([] { kn::getQsaIndexerWorkspaceSize(-3, 8); }),
                   {"getQsaIndexerWorkspaceSize", "batchSize"});
    expectMentions(thrownMessage([] { kn::getQsaIndexerWorkspaceSize(1, 0); }),
                   {"getQsaIndexerWorkspaceSize", "maxSeqLen"});
}

struct FakeDecodeArgs {
    alignas(128) unsigned char storage[4096];
    int32_t* outIdx = reinterpret_cast<int32_t*>(storage);
    Half const* indexQk = reinterpret_cast<Half const*>(storage + 128);
    float const* cosSin = reinterpret_cast<float const*>(storage + 256);
    int32_t const* ctx = reinterpret_cast<int32_t const*>(storage + 384);
    Half const* w = reinterpret_cast<Half const*>(storage + 512);
    void* workspace = storage + 1024;
    kn::QsaIndexerPoolState pool{storage + 2048, reinterpret_cast<int32_t const*>(storage + 640), 1, 1, 2, 384, 256};
};

TEST(HostApi, DecodeRejectsBadArgumentsBeforeTheDevice) {
    FakeDecodeArgs a;
    auto run = [&](int32_t* out, kn::QsaIndexerPoolState const& pool, void* ws, size_t bytes, int32_t B, int32_t mb) {
        return thrownMessage([&] {
            kn::runQsaIndexerDecode<Half>(out, a.indexQk, a.cosSin, a.ctx, a.w, a.w, 1e-6f, pool, nullptr, ws, bytes, B,
                                          mb, nullptr);
        });
    };
    size_t const need = qsa::ref::decodeWorkspaceBytes(2, 8);
    expectMentions(run(nullptr, a.pool, a.workspace, need, 2, 8), {"runQsaIndexerDecode", "outIdx"});
    expectMentions(run(a.outIdx, a.pool, a.workspace, need, 0, 8), {"runQsaIndexerDecode", "batchSize"});
    expectMentions(run(a.outIdx, a.pool, a.workspace, need, 2, 0), {"runQsaIndexerDecode", "maxBlocks"});
    expectMentions(run(a.outIdx, a.pool, static_cast<unsigned char*>(a.workspace) + 64, need, 2, 8),
                   {"runQsaIndexerDecode", "workspace", "128"});
    // Undersized: the message gives both numbers.
    expectMentions(
        run(a.outIdx, a.pool, a.workspace, need - 1, 2, 8),
        {"runQsaIndexerDecode", "workspaceBytes", std::to_string(need).c_str(), std::to_string(need - 1).c_str()});
    kn::QsaIndexerPoolState bad = a.pool;
    bad.headSize = 300; // headSize + 128 > poolHeadDim (384)
    expectMentions(run(a.outIdx, bad, a.workspace, need, 2, 8), {"runQsaIndexerDecode", "headSize"});
    bad = a.pool;
    bad.numPages = 0;
    expectMentions(run(a.outIdx, bad, a.workspace, need, 2, 8), {"runQsaIndexerDecode", "numPages"});
    bad = a.pool;
    bad.pageTable = nullptr;
    expectMentions(run(a.outIdx, bad, a.workspace, need, 2, 8), {"runQsaIndexerDecode", "pageTable"});
}

TEST(HostApi, PrefillRejectsNullAndNonPositiveBeforeTheDevice) {
    FakeDecodeArgs a;
    auto run = [&](int32_t* out, Half const* qk, int32_t B, int32_t S) {
        return thrownMessage([&] {
            kn::runQsaIndexerPrefill<Half>(out, qk, a.cosSin, a.ctx, a.w, a.w, 1e-6f, a.workspace, 1 << 20, B, S,
                                           nullptr, nullptr);
        });
    };
    expectMentions(run(nullptr, a.indexQk, 1, 8), {"runQsaIndexerPrefill", "outIdx"});
    expectMentions(run(a.outIdx, nullptr, 1, 8), {"runQsaIndexerPrefill", "indexQk"});
    expectMentions(run(a.outIdx, a.indexQk, 0, 8), {"runQsaIndexerPrefill", "batchSize"});
    expectMentions(run(a.outIdx, a.indexQk, 1, -2), {"runQsaIndexerPrefill", "seqLen"});
}

// Pointers below the natural alignment of their element type (T: 2 bytes, float / int32: 4) would fault on
// the GPU: each runner refuses them on the host, naming the function and the argument (issue 14). The
// GPU test //kernels:alignment_test checks that naturally aligned pointers give bit-identical results.
TEST(HostApi, PointersBelowNaturalAlignmentThrowBeforeTheDevice) {
    FakeDecodeArgs a;
    struct Args {
        int32_t* out;
        Half const* qk;
        float const* cs;
        int32_t const* ctx;
        Half const* wQ;
        Half const* wK;
        kn::QsaIndexerPoolState pool;
        int32_t* split;
    };
    Args const good{a.outIdx, a.indexQk, a.cosSin, a.ctx,
                    a.w,      a.w,       a.pool,   reinterpret_cast<int32_t*>(a.storage + 768)};
    auto off = [](auto* p, int bytes) {
        using P = decltype(p);
        return reinterpret_cast<P>(reinterpret_cast<uintptr_t>(p) + bytes);
    };
    std::vector<std::pair<char const*, Args>> cases;
    auto add = [&](char const* name, auto mut) {
        Args x = good;
        mut(x);
        cases.emplace_back(name, x);
    };
    add("outIdx", [&](Args& x) { x.out = off(x.out, 2); });
    add("indexQk", [&](Args& x) { x.qk = off(x.qk, 1); });
    add("cosSin", [&](Args& x) { x.cs = off(x.cs, 2); });
    add("contextLengths", [&](Args& x) { x.ctx = off(x.ctx, 2); });
    add("wQ", [&](Args& x) { x.wQ = off(x.wQ, 1); });
    add("wK", [&](Args& x) { x.wK = off(x.wK, 1); });
    add("poolState.poolPtr", [&](Args& x) { x.pool.poolPtr = off(static_cast<char*>(x.pool.poolPtr), 1); });
    add("poolState.pageTable", [&](Args& x) { x.pool.pageTable = off(x.pool.pageTable, 2); });
    add("splitCounters", [&](Args& x) { x.split = off(x.split, 2); });
    size_t const need = qsa::ref::decodeWorkspaceBytes(2, 8);
    for (auto const& [name, x] : cases) {
        SCOPED_TRACE(name);
        expectMentions(thrownMessage([&] {
                           kn::runQsaIndexerDecode<Half>(x.out, x.qk, x.cs, x.ctx, x.wQ, x.wK, 1e-6f, x.pool, x.split,
                                                         a.workspace, need, 2, 8, nullptr);
                       }),
                       {"runQsaIndexerDecode", name, "aligned"});
        if (std::string(name) == "splitCounters")
            continue; // not an argument of prefill
        expectMentions(thrownMessage([&] {
                           kn::runQsaIndexerPrefill<Half>(x.out, x.qk, x.cs, x.ctx, x.wQ, x.wK, 1e-6f, a.workspace,
                                                          1 << 20, 1, 8, &x.pool, nullptr);
                       }),
                       {"runQsaIndexerPrefill", name, "aligned"});
    }
}

} // namespace

// The kernels' host-side API that needs no GPU, so that CI (no GPU) runs a real test of this package:
// the decode workspace size against the reference's section-6 formula, and the section-2 argument
// checks that throw before anything reaches the device. Pointers are never dereferenced on the host, so
// fake (non-null, aligned) addresses stand in for device buffers.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

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

} // namespace

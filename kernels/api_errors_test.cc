// Argument validation of the public API (contract section 2): every invalid argument throws
// std::runtime_error whose message names the function and the argument (and, for an undersized
// workspace, both numbers). A valid call is made first so that each failure is due to one argument.
#include <functional>

#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

// Expects fn() to throw std::runtime_error whose message contains every string of `all` and at least
// one of `any` (when non-empty).
void expectThrows(std::string const& label, std::function<void()> const& fn, std::vector<std::string> const& all,
                  std::vector<std::string> const& any = {}) {
    SCOPED_TRACE(label);
    try {
        fn();
    } catch (std::runtime_error const& e) {
        std::string msg = e.what();
        for (auto const& s : all)
            EXPECT_NE(msg.find(s), std::string::npos) << "message lacks '" << s << "': " << msg;
        if (!any.empty()) {
            bool found = false;
            for (auto const& s : any)
                found = found || msg.find(s) != std::string::npos;
            EXPECT_TRUE(found) << "message names none of the expected arguments: " << msg;
        }
        return;
    } catch (std::exception const& e) {
        ADD_FAILURE() << "threw a non-runtime_error: " << e.what();
        return;
    }
    ADD_FAILURE() << "did not throw";
}

using T = half;
constexpr int32_t kB = 2, kS = 9, kMaxBlocks = 8;

// The pointer arguments both runners take first.
struct Inputs {
    int32_t* outIdx;
    T const* indexQk;
    float const* cosSin;
    int32_t const* contextLengths;
    T const* wQ;
    T const* wK;
};

// A pool of 4 pages, 2 KV heads, every page-table entry a hole; 256 bytes of workspace slack to misalign.
struct Fixture : RunnerBufs {
    Fixture() : RunnerBufs(kB, kS, kMaxBlocks, {9, 5}, {4, 1, 2, 384, 256}, std::vector<int32_t>(kB * 2, -1), 256) {}
    Inputs inputs() const {
        return {out.get(), qk.as<T const>(), cs.get(), ctx.get(), wQ.as<T const>(), wK.as<T const>()};
    }
};

struct PrefillArgs : Inputs {
    void* workspace;
    size_t workspaceBytes;
    int32_t batchSize, seqLen;
    kn::QsaIndexerPoolState const* pool;
};

void callPrefill(PrefillArgs const& a) {
    kn::runQsaIndexerPrefill<T>(a.outIdx, a.indexQk, a.cosSin, a.contextLengths, a.wQ, a.wK, 1e-6f, a.workspace,
                                a.workspaceBytes, a.batchSize, a.seqLen, a.pool, nullptr);
}

struct DecodeArgs : Inputs {
    kn::QsaIndexerPoolState pool;
    int32_t* split;
    void* workspace;
    size_t workspaceBytes;
    int32_t batchSize, maxBlocks;
};

void callDecode(DecodeArgs const& a) {
    kn::runQsaIndexerDecode<T>(a.outIdx, a.indexQk, a.cosSin, a.contextLengths, a.wQ, a.wK, 1e-6f, a.pool, a.split,
                               a.workspace, a.workspaceBytes, a.batchSize, a.maxBlocks, nullptr);
}

// with(mut): a call of `call` on `good` with one argument changed by mut.
template <typename Args>
auto changedCall(Args const& good, void (*call)(Args const&)) {
    return [good, call](auto mut) {
        Args a = good;
        mut(a);
        return [a, call] { call(a); };
    };
}

// Invalid pool states (section 2), each with the field the message must name.
std::vector<std::pair<std::string, kn::QsaIndexerPoolState>> badPools(kn::QsaIndexerPoolState good) {
    std::vector<std::pair<std::string, kn::QsaIndexerPoolState>> v;
    auto add = [&](std::string name, auto mut) {
        kn::QsaIndexerPoolState p = good;
        mut(p);
        v.emplace_back(name, p);
    };
    add("poolPtr", [](auto& p) { p.poolPtr = nullptr; });
    add("pageTable", [](auto& p) { p.pageTable = nullptr; });
    add("numPages", [](auto& p) { p.numPages = 0; });
    add("numPages", [](auto& p) { p.numPages = -4; });
    add("numKVHeads", [](auto& p) { p.numKVHeads = 0; });
    add("headSize", [](auto& p) { p.headSize = 0; });
    add("headSize", [](auto& p) { p.headSize = -128; });
    add("headSize+128>poolHeadDim", [](auto& p) { p.headSize = 257; }); // 257 + 128 > 384
    add("headSize+128>poolHeadDim", [](auto& p) { p.poolHeadDim = 383; });
    add("maxPagesPerSeq", [](auto& p) { p.maxPagesPerSeq = 0; });
    add("maxPagesPerSeq", [](auto& p) { p.maxPagesPerSeq = -1; });
    return v;
}

// The checks both runners make first (contract section 2): `with(mut)` is the valid call with one argument
// changed; dim is the second size (seqLen / maxBlocks), set to 0 and `negative`; the workspace is moved by
// `misalign` bytes.
template <typename Args, typename With>
void expectSharedRunnerChecks(char const* fn, With with, char const* dimName, int32_t Args::*dim, int32_t negative,
                              size_t misalign) {
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
    expectThrows("workspace misaligned",
                 with([misalign](Args& a) { a.workspace = static_cast<char*>(a.workspace) + misalign; }),
                 {fn, "workspace"});
}

// Every invalid pool state of badPools in an otherwise valid call `withPool(pool)`.
template <typename WithPool>
void expectBadPoolsThrow(char const* fn, kn::QsaIndexerPoolState const& good, WithPool withPool) {
    for (auto const& bp : badPools(good)) {
        std::function<void()> const call = withPool(bp.second);
        if (bp.first == "headSize+128>poolHeadDim") {
            expectThrows("pool " + bp.first, call, {fn}, {"headSize", "poolHeadDim"});
        } else {
            expectThrows("pool " + bp.first, call, {fn, bp.first});
        }
    }
}

TEST(ApiErrors, Prefill) {
    Fixture f;
    char const* fn = "runQsaIndexerPrefill";
    PrefillArgs good{f.inputs(), f.ws.get(), f.wsBytes, kB, kS, nullptr};
    ASSERT_NO_THROW(callPrefill(good));
    PrefillArgs withPool = good;
    withPool.pool = &f.pool;
    ASSERT_NO_THROW(callPrefill(withPool));
    QSA_CUDA(cudaDeviceSynchronize());

    auto with = changedCall(good, callPrefill);
    expectSharedRunnerChecks<PrefillArgs>(fn, with, "seqLen", &PrefillArgs::seqLen, -1, 64);
    expectThrows("workspace misaligned by 4", with([](auto& a) { a.workspace = static_cast<char*>(a.workspace) + 4; }),
                 {fn, "workspace"});
    size_t need = f.wsBytes;
    expectThrows("workspace undersized", with([need](auto& a) { a.workspaceBytes = need - 1; }),
                 {fn, "workspace", std::to_string(need - 1), std::to_string(need)});
    expectThrows("workspace 0 bytes", with([](auto& a) { a.workspaceBytes = 0; }), {fn, "workspace"});
    // The size needed depends on (B, S): a workspace for S = 9 does not serve S = 4096.
    size_t need2 = kn::getQsaIndexerWorkspaceSize(kB, 4096);
    expectThrows("workspace for a smaller S", with([](auto& a) { a.seqLen = 4096; }),
                 {fn, "workspace", std::to_string(f.wsBytes), std::to_string(need2)});
    expectBadPoolsThrow(fn, f.pool, [&](kn::QsaIndexerPoolState const& bad) {
        auto p = std::make_shared<kn::QsaIndexerPoolState>(bad);
        PrefillArgs a = withPool;
        a.pool = p.get();
        return [a, p] { callPrefill(a); };
    });
}

TEST(ApiErrors, Decode) {
    Fixture f;
    char const* fn = "runQsaIndexerDecode";
    DecodeArgs good{f.inputs(), f.pool, f.split.get(), f.dWs.get(), f.dWsBytes, kB, kMaxBlocks};
    ASSERT_NO_THROW(callDecode(good));
    DecodeArgs noSplit = good;
    noSplit.split = nullptr; // splitCounters is optional
    ASSERT_NO_THROW(callDecode(noSplit));
    QSA_CUDA(cudaDeviceSynchronize());

    auto with = changedCall(good, callDecode);
    expectSharedRunnerChecks<DecodeArgs>(fn, with, "maxBlocks", &DecodeArgs::maxBlocks, -3, 32);
    size_t need = f.dWsBytes;
    expectThrows("workspace undersized", with([need](auto& a) { a.workspaceBytes = need - 1; }),
                 {fn, "workspace", std::to_string(need - 1), std::to_string(need)});
    size_t need2 = kn::getQsaIndexerDecodeWorkspaceSize(kB, 100000);
    expectThrows("workspace for fewer blocks", with([](auto& a) { a.maxBlocks = 100000; }),
                 {fn, "workspace", std::to_string(f.dWsBytes), std::to_string(need2)});
    expectBadPoolsThrow(fn, f.pool, [&](kn::QsaIndexerPoolState const& bad) {
        DecodeArgs a = good;
        a.pool = bad;
        return [a] { callDecode(a); };
    });
}

TEST(ApiErrors, SizeFunctions) {
    for (auto bs : std::vector<std::pair<int, int>>{{0, 8}, {-1, 8}, {1, 0}, {1, -5}}) {
        std::string l = params("(", bs.first, ", ", bs.second, ")");
        expectThrows("getQsaIndexerWorkspaceSize" + l, [bs] { kn::getQsaIndexerWorkspaceSize(bs.first, bs.second); },
                     {"getQsaIndexerWorkspaceSize"}, {"batchSize", "maxSeqLen"});
        expectThrows("getQsaIndexerDecodeWorkspaceSize" + l,
                     [bs] { kn::getQsaIndexerDecodeWorkspaceSize(bs.first, bs.second); },
                     {"getQsaIndexerDecodeWorkspaceSize"}, {"maxBatchSize", "maxBlocks"});
    }
    EXPECT_NO_THROW(kn::getQsaIndexerWorkspaceSize(1, 1));
    EXPECT_NO_THROW(kn::getQsaIndexerDecodeWorkspaceSize(1, 1));
}

TEST(ApiErrors, LaunchersValidateToo) {
    // qsaIndexerKernels.h: every launcher validates its host-side arguments and names itself.
    Fixture f;
    auto* q = reinterpret_cast<T*>(f.qk.get());
    expectThrows("launchQsaQPrep null qNormed",
                 [&] { kn::launchQsaQPrep<T>(nullptr, q, f.cs.get(), f.ctx.get(), q, 1e-6f, kB, kS, nullptr); },
                 {"launchQsaQPrep", "qNormed"});
    expectThrows("launchQsaQPrep seqLen 0",
                 [&] { kn::launchQsaQPrep<T>(q, q, f.cs.get(), f.ctx.get(), q, 1e-6f, kB, 0, nullptr); },
                 {"launchQsaQPrep", "seqLen"});
    expectThrows("launchQsaSortRows small temp",
                 [&] {
                     kn::launchQsaSortRows(f.cs.get(), f.cs.get() + 64, f.ctx.get(), f.split.get(), 1, 2, f.ws.get(), 0,
                                           nullptr);
                 },
                 {"launchQsaSortRows"});
    expectThrows("launchQsaDecodeSelect maxBlocks 0",
                 [&] { kn::launchQsaDecodeSelect(f.out.get(), f.cs.get(), f.ctx.get(), kB, 0, nullptr); },
                 {"launchQsaDecodeSelect", "maxBlocks"});
    expectThrows("launchQsaDecodeScores bad pool",
                 [&] {
                     kn::QsaIndexerPoolState p = f.pool;
                     p.numKVHeads = 0;
                     kn::launchQsaDecodeScores<T>(f.cs.get(), q, f.ctx.get(), p, kB, kMaxBlocks, nullptr);
                 },
                 {"launchQsaDecodeScores", "numKVHeads"});
}

} // namespace
} // namespace ktest
} // namespace qsa

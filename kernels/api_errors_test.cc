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

struct Fixture {
    Fixture()
        : qk(size_t(kB) * kS * 640), cs(size_t(kS) * 64), ctx(std::vector<int32_t>{9, 5}), wQ(128), wK(128),
          out(size_t(kB) * kS * 2051), pageTable(std::vector<int32_t>(size_t(kB) * 2 * 1, -1)),
          poolData(size_t(2) * 4 * 128 * 2 * 384), split(size_t(kB) * 2),
          wsBytes(kn::getQsaIndexerWorkspaceSize(kB, kS)), ws(wsBytes + 256),
          dWsBytes(kn::getQsaIndexerDecodeWorkspaceSize(kB, kMaxBlocks)), dWs(dWsBytes + 256) {
        qk.fillBytes(0);
        cs.fillBytes(0);
        wQ.fillBytes(0);
        wK.fillBytes(0);
        pool = {poolData.get(), pageTable.get(), 1, 4, 2, 384, 256};
    }
    DevBuf<uint16_t> qk;
    DevBuf<float> cs;
    DevBuf<int32_t> ctx;
    DevBuf<uint16_t> wQ, wK;
    DevBuf<int32_t> out, pageTable;
    DevBuf<uint16_t> poolData;
    DevBuf<int32_t> split;
    size_t wsBytes;
    DevBuf<uint8_t> ws;
    size_t dWsBytes;
    DevBuf<uint8_t> dWs;
    kn::QsaIndexerPoolState pool{};
};

struct PrefillArgs {
    int32_t* outIdx;
    T const* indexQk;
    float const* cosSin;
    int32_t const* contextLengths;
    T const* wQ;
    T const* wK;
    void* workspace;
    size_t workspaceBytes;
    int32_t batchSize, seqLen;
    kn::QsaIndexerPoolState const* pool;
};

void callPrefill(PrefillArgs const& a) {
    kn::runQsaIndexerPrefill<T>(a.outIdx, a.indexQk, a.cosSin, a.contextLengths, a.wQ, a.wK, 1e-6f, a.workspace,
                                a.workspaceBytes, a.batchSize, a.seqLen, a.pool, nullptr);
}

struct DecodeArgs {
    int32_t* outIdx;
    T const* indexQk;
    float const* cosSin;
    int32_t const* contextLengths;
    T const* wQ;
    T const* wK;
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

TEST(ApiErrors, Prefill) {
    Fixture f;
    char const* fn = "runQsaIndexerPrefill";
    PrefillArgs good{f.out.get(),
                     reinterpret_cast<T const*>(f.qk.get()),
                     f.cs.get(),
                     f.ctx.get(),
                     reinterpret_cast<T const*>(f.wQ.get()),
                     reinterpret_cast<T const*>(f.wK.get()),
                     f.ws.get(),
                     f.wsBytes,
                     kB,
                     kS,
                     nullptr};
    ASSERT_NO_THROW(callPrefill(good));
    PrefillArgs withPool = good;
    withPool.pool = &f.pool;
    ASSERT_NO_THROW(callPrefill(withPool));
    QSA_CUDA(cudaDeviceSynchronize());

    auto with = [&](auto mut) {
        PrefillArgs a = good;
        mut(a);
        return [a] { callPrefill(a); };
    };
    expectThrows("outIdx null", with([](auto& a) { a.outIdx = nullptr; }), {fn, "outIdx"});
    expectThrows("indexQk null", with([](auto& a) { a.indexQk = nullptr; }), {fn, "indexQk"});
    expectThrows("cosSin null", with([](auto& a) { a.cosSin = nullptr; }), {fn, "cosSin"});
    expectThrows("contextLengths null", with([](auto& a) { a.contextLengths = nullptr; }), {fn, "contextLengths"});
    expectThrows("wQ null", with([](auto& a) { a.wQ = nullptr; }), {fn, "wQ"});
    expectThrows("wK null", with([](auto& a) { a.wK = nullptr; }), {fn, "wK"});
    expectThrows("workspace null", with([](auto& a) { a.workspace = nullptr; }), {fn, "workspace"});
    for (int32_t v : {0, -1}) {
        expectThrows("batchSize " + std::to_string(v), with([v](auto& a) { a.batchSize = v; }), {fn, "batchSize"});
        expectThrows("seqLen " + std::to_string(v), with([v](auto& a) { a.seqLen = v; }), {fn, "seqLen"});
    }
    expectThrows("workspace misaligned", with([](auto& a) { a.workspace = static_cast<char*>(a.workspace) + 64; }),
                 {fn, "workspace"});
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
    for (auto const& bp : badPools(f.pool)) {
        auto p = std::make_shared<kn::QsaIndexerPoolState>(bp.second);
        PrefillArgs a = withPool;
        a.pool = p.get();
        if (bp.first == "headSize+128>poolHeadDim") {
            expectThrows("pool " + bp.first, [a, p] { callPrefill(a); }, {fn}, {"headSize", "poolHeadDim"});
        } else {
            expectThrows("pool " + bp.first, [a, p] { callPrefill(a); }, {fn, bp.first});
        }
    }
}

TEST(ApiErrors, Decode) {
    Fixture f;
    char const* fn = "runQsaIndexerDecode";
    DecodeArgs good{f.out.get(),
                    reinterpret_cast<T const*>(f.qk.get()),
                    f.cs.get(),
                    f.ctx.get(),
                    reinterpret_cast<T const*>(f.wQ.get()),
                    reinterpret_cast<T const*>(f.wK.get()),
                    f.pool,
                    f.split.get(),
                    f.dWs.get(),
                    f.dWsBytes,
                    kB,
                    kMaxBlocks};
    ASSERT_NO_THROW(callDecode(good));
    DecodeArgs noSplit = good;
    noSplit.split = nullptr; // splitCounters is optional
    ASSERT_NO_THROW(callDecode(noSplit));
    QSA_CUDA(cudaDeviceSynchronize());

    auto with = [&](auto mut) {
        DecodeArgs a = good;
        mut(a);
        return [a] { callDecode(a); };
    };
    expectThrows("outIdx null", with([](auto& a) { a.outIdx = nullptr; }), {fn, "outIdx"});
    expectThrows("indexQk null", with([](auto& a) { a.indexQk = nullptr; }), {fn, "indexQk"});
    expectThrows("cosSin null", with([](auto& a) { a.cosSin = nullptr; }), {fn, "cosSin"});
    expectThrows("contextLengths null", with([](auto& a) { a.contextLengths = nullptr; }), {fn, "contextLengths"});
    expectThrows("wQ null", with([](auto& a) { a.wQ = nullptr; }), {fn, "wQ"});
    expectThrows("wK null", with([](auto& a) { a.wK = nullptr; }), {fn, "wK"});
    expectThrows("workspace null", with([](auto& a) { a.workspace = nullptr; }), {fn, "workspace"});
    for (int32_t v : {0, -3}) {
        expectThrows("batchSize " + std::to_string(v), with([v](auto& a) { a.batchSize = v; }), {fn, "batchSize"});
        expectThrows("maxBlocks " + std::to_string(v), with([v](auto& a) { a.maxBlocks = v; }), {fn, "maxBlocks"});
    }
    expectThrows("workspace misaligned", with([](auto& a) { a.workspace = static_cast<char*>(a.workspace) + 32; }),
                 {fn, "workspace"});
    size_t need = f.dWsBytes;
    expectThrows("workspace undersized", with([need](auto& a) { a.workspaceBytes = need - 1; }),
                 {fn, "workspace", std::to_string(need - 1), std::to_string(need)});
    size_t need2 = kn::getQsaIndexerDecodeWorkspaceSize(kB, 100000);
    expectThrows("workspace for fewer blocks", with([](auto& a) { a.maxBlocks = 100000; }),
                 {fn, "workspace", std::to_string(f.dWsBytes), std::to_string(need2)});
    for (auto const& bp : badPools(f.pool)) {
        DecodeArgs a = good;
        a.pool = bp.second;
        if (bp.first == "headSize+128>poolHeadDim") {
            expectThrows("pool " + bp.first, [a] { callDecode(a); }, {fn}, {"headSize", "poolHeadDim"});
        } else {
            expectThrows("pool " + bp.first, [a] { callDecode(a); }, {fn, bp.first});
        }
    }
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

// Pointer alignment (beyond contract section 2's 128-byte workspace): every pointer argument of both
// runners, one at a time and all together, placed at the smallest NATURAL alignment of its element type
// above a 256-byte aligned allocation (T at +2 bytes, float / int32 at +4 bytes). Each run must either
// equal the aligned run bit for bit (outIdx, pool after, splitCounters after) or throw a
// std::runtime_error naming the function and the argument (the workspace, which the contract requires
// 128-byte aligned). A pointer BELOW natural alignment (T at +1, int32 at +2) must throw naming the
// argument: never a device fault.
#include <functional>
#include <map>

#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

// Device bytes copied at `offset` past a cudaMalloc base (256-byte aligned).
class OffsetBuf {
public:
    OffsetBuf(void const* host, size_t bytes, size_t offset) : bytes_(bytes), offset_(offset), raw_(bytes + 512) {
        raw_.fillBytes(0xA5);
        if (bytes > 0)
            QSA_CUDA(cudaMemcpy(ptr(), host, bytes, cudaMemcpyHostToDevice));
        QSA_CUDA(cudaDeviceSynchronize());
    }
    template <typename X>
    OffsetBuf(std::vector<X> const& host, size_t offset) : OffsetBuf(host.data(), host.size() * sizeof(X), offset) {}
    void* ptr() const { return raw_.get() + offset_; }
    template <typename X>
    X* as() const {
        return static_cast<X*>(ptr());
    }
    template <typename X>
    std::vector<X> download() const {
        std::vector<X> h(bytes_ / sizeof(X));
        QSA_CUDA(cudaDeviceSynchronize());
        QSA_CUDA(cudaMemcpy(h.data(), ptr(), bytes_, cudaMemcpyDeviceToHost));
        return h;
    }

private:
    size_t bytes_, offset_;
    DevBuf<uint8_t> raw_;
};

// Outcome of one run: the outputs, or the message of the runtime_error it threw.
struct Outcome {
    bool threw = false;
    std::string message;
    std::vector<int32_t> outIdx;
    std::vector<uint16_t> pool;
    std::vector<int32_t> split;
};

// Offsets per argument name (0 = aligned).
using Offsets = std::map<std::string, size_t>;
size_t at(Offsets const& o, std::string const& k) {
    auto it = o.find(k);
    return it == o.end() ? 0 : it->second;
}

Outcome guarded(std::function<void(Outcome&)> const& run) {
    Outcome r;
    try {
        run(r);
    } catch (std::runtime_error const& e) {
        r.threw = true;
        r.message = e.what();
    }
    // A fault would be sticky: every later CUDA call of this binary would fail, the test with it.
    QSA_CUDA(cudaDeviceSynchronize());
    QSA_CUDA(cudaGetLastError());
    return r;
}

// The arguments both runners take, each at its offset: outIdx (`outRows` rows of 0x5A5A5A5A), the inputs and
// gammas of case `c`, its pool and page table, and a workspace of `wsBytes` bytes of 0xFF.
struct OffsetArgs {
    template <typename Case>
    OffsetArgs(Case const& c, size_t outRows, Offsets const& o, size_t wsBytes)
        : out(std::vector<int32_t>(outRows * ref::kIndexWidth, 0x5A5A5A5A), at(o, "outIdx")),
          qk(c.indexQk, at(o, "indexQk")), cs(c.cosSin, at(o, "cosSin")),
          ctx(c.contextLengths, at(o, "contextLengths")), wQ(c.wQ, at(o, "wQ")), wK(c.wK, at(o, "wK")),
          pool(c.pool.data, at(o, "poolState.poolPtr")), table(c.pool.pageTable, at(o, "poolState.pageTable")),
          ws(std::vector<uint8_t>(wsBytes, 0xFF), at(o, "workspace")), wsBytes(wsBytes),
          st(testlib::poolState(c.pool.dims, pool.ptr(), table.as<int32_t const>())) {}
    OffsetBuf out, qk, cs, ctx, wQ, wK, pool, table, ws;
    size_t wsBytes;
    kn::QsaIndexerPoolState st;
};

template <typename T>
Outcome runPrefill(ref::PrefillCase const& c, Offsets const& o) {
    return guarded([&](Outcome& r) {
        OffsetArgs a(c, size_t(c.batchSize) * c.seqLen, o, kn::getQsaIndexerWorkspaceSize(c.batchSize, c.seqLen));
        kn::runQsaIndexerPrefill<T>(a.out.as<int32_t>(), a.qk.as<T const>(), a.cs.as<float const>(),
                                    a.ctx.as<int32_t const>(), a.wQ.as<T const>(), a.wK.as<T const>(), c.rmsEps,
                                    a.ws.ptr(), a.wsBytes, c.batchSize, c.seqLen, &a.st, nullptr);
        r.outIdx = a.out.download<int32_t>();
        r.pool = a.pool.download<uint16_t>();
    });
}

template <typename T>
Outcome runDecode(ref::DecodeCase const& c, Offsets const& o) {
    return guarded([&](Outcome& r) {
        OffsetArgs a(c, size_t(c.batchSize), o, kn::getQsaIndexerDecodeWorkspaceSize(c.batchSize, c.maxBlocks));
        OffsetBuf split(c.splitCounters, at(o, "splitCounters"));
        kn::runQsaIndexerDecode<T>(a.out.as<int32_t>(), a.qk.as<T const>(), a.cs.as<float const>(),
                                   a.ctx.as<int32_t const>(), a.wQ.as<T const>(), a.wK.as<T const>(), c.rmsEps, a.st,
                                   split.as<int32_t>(), a.ws.ptr(), a.wsBytes, c.batchSize, c.maxBlocks, nullptr);
        r.outIdx = a.out.download<int32_t>();
        r.pool = a.pool.download<uint16_t>();
        r.split = split.download<int32_t>();
    });
}

// Every pointer argument of the runners (in their order) with the natural alignment of its element type
// (bytes); splitCounters is decode's only.
std::vector<std::pair<std::string, size_t>> const kNatural = {{"outIdx", 4},
                                                              {"indexQk", 2},
                                                              {"cosSin", 4},
                                                              {"contextLengths", 4},
                                                              {"wQ", 2},
                                                              {"wK", 2},
                                                              {"poolState.poolPtr", 2},
                                                              {"poolState.pageTable", 4},
                                                              {"splitCounters", 4},
                                                              {"workspace", 4}};

// Offsets every argument of kNatural (splitCounters only `withSplit`) by its natural alignment, and by half
// of it, one at a time, then all together.
void checkAll(char const* fn, bool withSplit, std::function<Outcome(Offsets const&)> const& run,
              std::string const& params) {
    Outcome const base = run({});
    ASSERT_FALSE(base.threw) << fn << " aligned run threw: " << base.message;
    auto same = [&](Outcome const& r, std::string const& what) {
        EXPECT_TRUE(bitsEqual(base.outIdx, r.outIdx, {what + " outIdx", params, size_t(ref::kIndexWidth)}));
        EXPECT_TRUE(bitsEqual(base.pool, r.pool, {what + " pool", params}));
        EXPECT_TRUE(bitsEqual(base.split, r.split, {what + " splitCounters", params}));
    };
    Offsets all;
    for (auto const& [a, nat] : kNatural) {
        if (a == "splitCounters" && !withSplit)
            continue;
        if (a != "workspace")
            all[a] = nat;
        Outcome const r = run({{a, nat}});
        if (a == "workspace") {
            // The contract requires 128 bytes: a 4-byte offset must throw, naming the workspace.
            ASSERT_TRUE(r.threw) << fn << ": workspace at +4 bytes did not throw";
            EXPECT_NE(r.message.find(fn), std::string::npos) << r.message;
            EXPECT_NE(r.message.find("workspace"), std::string::npos) << r.message;
            continue;
        }
        if (r.threw) {
            // Allowed, when clear: the message names the function and the argument.
            EXPECT_NE(r.message.find(fn), std::string::npos) << r.message;
            EXPECT_NE(r.message.find(a), std::string::npos) << r.message;
        } else {
            same(r, a + " at +" + std::to_string(nat));
        }
        if (nat > 1) {
            // Below natural alignment: the runner must refuse it on the host (a device access would fault).
            Outcome const bad = run({{a, nat / 2}});
            ASSERT_TRUE(bad.threw) << fn << ": " << a << " at +" << nat / 2 << " bytes did not throw";
            EXPECT_NE(bad.message.find(fn), std::string::npos) << bad.message;
            EXPECT_NE(bad.message.find(a), std::string::npos) << bad.message;
            EXPECT_NE(bad.message.find("aligned"), std::string::npos) << bad.message;
        }
    }
    Outcome const r = run(all);
    ASSERT_FALSE(r.threw) << fn << " with every pointer at natural alignment threw: " << r.message;
    same(r, "every pointer at natural alignment");
}

QSA_DTYPE_TEST_SUITE(Alignment);

TYPED_TEST(Alignment, Prefill) {
    using T = typename TypeParam::T;
    DType const dt = TypeParam::kDt;
    // nVis > 512 rows (radix select + CUB), a second sequence with a trailing incomplete block (raw-k tails).
    PrefillSpec const s = prefillSpec(2, 2200, {2200, 1031}, 14, Mode::kLowEntropy);
    ref::PrefillCase c = makePrefillCase(dt, s);
    Rng rng(140);
    c.hasPool = true;
    c.pool = makeHostPool(dt, s.B, {2 * 18 + 3, 18, 2, 384, 256}, Pages::kHoles, rng);
    checkAll(
        "runQsaIndexerPrefill", false, [&](Offsets const& o) { return runPrefill<T>(c, o); },
        specStr(dt, s) + " " + poolParams(c.pool.dims));
}

TYPED_TEST(Alignment, Decode) {
    using T = typename TypeParam::T;
    DType const dt = TypeParam::kDt;
    Rng rng(141);
    ref::DecodeCase c;
    c.dtype = dt;
    c.batchSize = 3;
    c.contextLengths = {4100, 2052, 37}; // nVis 1025 > 512 (radix select), a completing token, a short row
    c.maxBlocks = 1026;
    c.indexQk = randomT(dt, size_t(c.batchSize) * ref::kQkWidth, Mode::kNormal, rng);
    c.cosSin = makeCosSin(4100);
    c.wQ = makeGamma(dt, Gamma::kSmall, rng);
    c.wK = makeGamma(dt, Gamma::kSmall, rng);
    // Any pool state is a valid start (decode reads whatever the V-tails hold); headSize 256 and
    // poolHeadDim 384 let the B2 16-byte loads run on the aligned pool.
    c.pool = makeHostPool(dt, c.batchSize, {3 * 33 + 2, 33, 2, 384, 256}, Pages::kFull, rng);
    c.hasSplitCounters = true;
    c.splitCounters.assign(size_t(c.batchSize) * 2, 7);
    checkAll(
        "runQsaIndexerDecode", true, [&](Offsets const& o) { return runDecode<T>(c, o); },
        params(dtName(dt), " decode B=3 ctx={4100,2052,37} maxBlocks=1026 ", poolParams(c.pool.dims)));
}

} // namespace
} // namespace ktest
} // namespace qsa

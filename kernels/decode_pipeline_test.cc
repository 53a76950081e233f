// runQsaIndexerDecode against reference runDecode, bit for bit, half and bf16 (contract sections 5-7):
// a prefill of L tokens with a pool, then many decode steps crossing page boundaries (and nVis = 512),
// each step compared on outIdx, the pool contents and splitCounters with the reference run on the same
// pool state; decode captured in a CUDA graph and replayed equals the plain stream run. The workspace size
// formula is //kernels:host_api_test's (CPU).
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

QSA_DTYPE_TEST_SUITE(DecodeTest);

// Device state of a decode loop on its own stream: inputs re-uploaded per step into the same buffers (as a
// graph needs).
template <typename T>
struct GpuDecode {
    GpuDecode(ref::HostPool const& hp, std::vector<float> const& cs, std::vector<uint16_t> const& wQ,
              std::vector<uint16_t> const& wK, int32_t B, int32_t maxBlocks, int32_t splitRows)
        : pool(hp), cosSin(cs), wQ(wQ), wK(wK), qk(size_t(B) * ref::kQkWidth), ctx(B),
          out(size_t(B) * ref::kIndexWidth), split(size_t(splitRows) * hp.dims.numKVHeads),
          wsBytes(kn::getQsaIndexerDecodeWorkspaceSize(B, maxBlocks)), ws(wsBytes), B(B), maxBlocks(maxBlocks) {}

    void upload(std::vector<uint16_t> const& q, std::vector<int32_t> const& c, std::vector<int32_t> const& sc,
                int wsFill) {
        qk.upload(q);
        ctx.upload(c);
        split.upload(sc);
        ws.fillBytes(wsFill);
        out.fillBytes(0x5A);
    }
    // withSplit false: splitCounters null (optional).
    void launch(float eps, bool withSplit = true) {
        kn::runQsaIndexerDecode<T>(out.get(), qk.as<T const>(), cosSin.get(), ctx.get(), wQ.as<T const>(),
                                   wK.as<T const>(), eps, pool.state(), withSplit ? split.get() : nullptr, ws.get(),
                                   wsBytes, B, maxBlocks, st.get());
    }
    // One step of dc's inputs (split uploaded, passed iff dc.hasSplitCounters), waited for; no launch may fail.
    void run(ref::DecodeCase const& dc, std::vector<int32_t> const& sc, int wsFill) {
        upload(dc.indexQk, dc.contextLengths, sc, wsFill);
        launch(dc.rmsEps, dc.hasSplitCounters);
        st.sync();
        QSA_CUDA(cudaGetLastError());
    }

    DevPool pool;
    DevBuf<float> cosSin;
    DevBuf<uint16_t> wQ, wK, qk;
    DevBuf<int32_t> ctx, out, split;
    size_t wsBytes;
    DevBuf<uint8_t> ws;
    int32_t B, maxBlocks;
    Stream st;
};

struct DecodeSpec {
    std::vector<int32_t> L; // prefill lengths; < 0 marks a sequence that stays invalid (ctx = -L - 1 each step)
    int32_t steps;
    int32_t maxBlocks;
    int32_t pagesPerSeq;
    ref::PoolDims dims; // numPages / maxPagesPerSeq filled in from B and pagesPerSeq
    Pages pages;
    Mode qk;
    uint64_t seed;
};

std::vector<int32_t> ctxAt(DecodeSpec const& d, int32_t step) {
    std::vector<int32_t> c(d.L.size());
    for (size_t b = 0; b < d.L.size(); ++b)
        c[b] = d.L[b] >= 0 ? d.L[b] + step + 1 : -d.L[b] - 1;
    return c;
}

template <typename T>
void multiStep(DType dt, DecodeSpec d) {
    int32_t const B = static_cast<int32_t>(d.L.size());
    d.dims.maxPagesPerSeq = d.pagesPerSeq;
    d.dims.numPages = B * d.pagesPerSeq + 3;
    // Prefill of the first L tokens with the pool (invalid sequences: ctx 0).
    int32_t S = 1, maxCtx = 1;
    std::vector<int32_t> prefillCtx;
    for (int32_t l : d.L) {
        S = std::max(S, l);
        prefillCtx.push_back(std::max(l, 0));
    }
    for (int32_t c : ctxAt(d, d.steps - 1))
        maxCtx = std::max(maxCtx, c);
    PrefillSpec const ps = prefillSpec(B, S, prefillCtx, d.seed, d.qk);
    ref::PrefillCase pc = makePrefillCase(dt, ps);
    pc.cosSin = makeCosSin(std::max(S, maxCtx));
    Rng rng(d.seed + 1);
    pc.hasPool = true;
    pc.pool = makeHostPool(dt, B, d.dims, d.pages, rng);
    std::string base = specStr(dt, ps) + " " + poolParams(d.dims) + pagesName(d.pages) +
                       params(" maxBlocks=", d.maxBlocks, " steps=", d.steps);
    ref::PrefillResult pr = ref::runPrefill(pc);
    int32_t const splitRows = B + 2; // rows >= B must stay untouched
    GpuDecode<T> g(pc.pool, pc.cosSin, pc.wQ, pc.wK, B, d.maxBlocks, splitRows);
    {
        std::vector<uint16_t> poolAfter;
        std::vector<int32_t> out = gpuPrefill<T>(pc, 0xFF, 0, &poolAfter, nullptr, &g.pool);
        ASSERT_TRUE(bitsEqual(pr.outIdx, out, {"prefill outIdx", base, 2051}));
        ASSERT_TRUE(bitsEqual(pr.poolAfter, poolAfter, {"pool after prefill", base, size_t(d.dims.poolHeadDim), dt}));
    }
    ref::HostPool hp = pc.pool;
    hp.data = pr.poolAfter;
    for (int32_t step = 0; step < d.steps; ++step) {
        std::vector<uint16_t> qk = randomT(dt, size_t(B) * ref::kQkWidth, d.qk, rng);
        ref::DecodeCase dc{dt, B, d.maxBlocks, qk, pc.cosSin, ctxAt(d, step), pc.wQ, pc.wK, pc.rmsEps, hp, true, {}};
        // The device buffer has splitRows > B rows: rows >= B must stay untouched.
        std::vector<int32_t> splitInit(size_t(splitRows) * d.dims.numKVHeads);
        for (auto& x : splitInit)
            x = static_cast<int32_t>(rng() % 1000) + 1;
        dc.splitCounters.assign(splitInit.begin(), splitInit.begin() + size_t(B) * d.dims.numKVHeads);
        std::string p = base + params(" step=", step, " ctx=", ctxStr(dc.contextLengths));
        SCOPED_TRACE(p);
        ref::DecodeResult r = ref::runDecode(dc);
        std::vector<int32_t> splitExpect = splitInit;
        std::copy(r.splitCountersAfter.begin(), r.splitCountersAfter.end(), splitExpect.begin());
        g.run(dc, splitInit, step % 2 ? 0xFF : 0x00);
        auto const outOk = bitsEqual(r.outIdx, g.out.download(), {"decode outIdx", p, 2051});
        auto const poolOk =
            bitsEqual(r.poolAfter, g.pool.data.download(), {"pool after decode", p, size_t(d.dims.poolHeadDim), dt});
        auto const splitOk =
            bitsEqual(splitExpect, g.split.download(), {"splitCounters", p, size_t(d.dims.numKVHeads)});
        EXPECT_TRUE(outOk);
        EXPECT_TRUE(poolOk);
        EXPECT_TRUE(splitOk);
        if (!outOk || !poolOk || !splitOk)
            return; // later steps would start from a wrong pool
        hp.data = r.poolAfter;
    }
}

TYPED_TEST(DecodeTest, ManyStepsAcrossPages) {
    // Sequences start at 2040 (crosses nVis = 512 and pages 16 -> 17), 250 (page 2), 126 (page 1), 0
    // (a new sequence from its first token), 2200 (crosses the floor edge of maxBlocks = 560: ctx 2241..2243
    // are valid with ctx / 4 == maxBlocks < ceilDiv(ctx, 4), from 2244 on invalid), plus an invalid one
    // (ctx 0) and one at ctx / 4 == maxBlocks + 1 (ctx 2244).
    DecodeSpec d{{2040, 250, 126, 0, 2200, -1, -(4 * 561 + 1)},
                 140,
                 560,
                 18,
                 {0, 0, 2, 256, 128},
                 Pages::kFull,
                 Mode::kNormal,
                 1};
    multiStep<typename TypeParam::T>(TypeParam::kDt, d);
}

TYPED_TEST(DecodeTest, ManyStepsLowEntropyWithHoles) {
    // Equal logits (ties decided by block id) and holes in the page table (dropped writes, +0.0 reads).
    DecodeSpec d{{2044, 380, 3}, 70, 560, 18, {0, 0, 1, 384, 256}, Pages::kHoles, Mode::kLowEntropy, 2};
    multiStep<typename TypeParam::T>(TypeParam::kDt, d);
}

// Decode captured once in a CUDA graph and replayed for `steps` steps with new inputs in the same buffers
// equals the plain stream run, which equals the reference. Sequence 3 starts at floorEdgeStart and crosses
// the floor edge of maxBlocks = 600 (2400..2403 valid: ctx / 4 == maxBlocks < ceilDiv(ctx, 4) for
// 2401..2403; 2404.. invalid) inside the captured graph too.
template <typename T>
void graphReplayEqualsStream(DType dt, int32_t steps, int32_t floorEdgeStart) {
    int32_t const B = 5, maxBlocks = 600, pagesPerSeq = 19;
    Rng rng(3);
    ref::PoolDims dims{B * pagesPerSeq + 1, pagesPerSeq, 2, 384, 256};
    ref::HostPool hp = makeHostPool(dt, B, dims, Pages::kFull, rng); // random pool: any state is a valid start
    std::vector<int32_t> start = {2045, 130, 1, floorEdgeStart, 0};
    std::vector<float> cs = makeCosSin(2404);
    std::vector<uint16_t> wQ = makeGamma(dt, Gamma::kSmall, rng), wK = makeGamma(dt, Gamma::kSmall, rng);
    std::vector<std::vector<uint16_t>> qks;
    std::vector<std::vector<int32_t>> ctxs, splits;
    for (int32_t s = 0; s < steps; ++s) {
        qks.push_back(randomT(dt, size_t(B) * ref::kQkWidth, Mode::kNormal, rng));
        std::vector<int32_t> c = start;
        for (int32_t b = 0; b < B - 1; ++b)
            c[b] += s;
        ctxs.push_back(c);
        std::vector<int32_t> sc(size_t(B) * dims.numKVHeads);
        for (auto& x : sc)
            x = static_cast<int32_t>(rng() % 100) + 1;
        splits.push_back(sc);
    }
    std::string p = params(dtName(dt), " B=", B, " maxBlocks=", maxBlocks, " start ctx=", ctxStr(start),
                           " steps=", steps, " ", poolParams(dims));
    SCOPED_TRACE(p);
    float const eps = 1e-6f;
    // Plain stream run; the reference on the same pool states alongside.
    std::vector<std::vector<int32_t>> plainOut, plainSplit;
    std::vector<uint16_t> plainPool;
    {
        GpuDecode<T> g(hp, cs, wQ, wK, B, maxBlocks, B);
        ref::HostPool h = hp;
        for (int32_t s = 0; s < steps; ++s) {
            ref::DecodeCase dc{dt, B, maxBlocks, qks[s], cs, ctxs[s], wQ, wK, eps, h, true, splits[s]};
            g.run(dc, splits[s], 0x00);
            plainOut.push_back(g.out.download());
            plainSplit.push_back(g.split.download());
            ref::DecodeResult r = ref::runDecode(dc);
            EXPECT_TRUE(bitsEqual(r.outIdx, plainOut.back(), {"stream outIdx vs reference", p, 2051}));
            h.data = r.poolAfter;
        }
        plainPool = g.pool.data.download();
        EXPECT_TRUE(bitsEqual(h.data, plainPool, {"stream pool vs reference", p, size_t(dims.poolHeadDim), dt}));
    }
    // Graph: captured once, replayed per step with new inputs in the same buffers, workspace re-poisoned.
    GpuDecode<T> g(hp, cs, wQ, wK, B, maxBlocks, B);
    g.upload(qks[0], ctxs[0], splits[0], 0xFF);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    QSA_CUDA(cudaStreamBeginCapture(g.st.get(), cudaStreamCaptureModeThreadLocal));
    g.launch(eps);
    QSA_CUDA(cudaStreamEndCapture(g.st.get(), &graph));
    QSA_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int32_t s = 0; s < steps; ++s) {
        g.upload(qks[s], ctxs[s], splits[s], s % 2 ? 0x7F : 0xFF);
        QSA_CUDA(cudaGraphLaunch(exec, g.st.get()));
        g.st.sync();
        std::string ps = params("step=", s);
        EXPECT_TRUE(bitsEqual(plainOut[s], g.out.download(), {"graph outIdx vs stream", p + " " + ps, 2051}));
        EXPECT_TRUE(bitsEqual(plainSplit[s], g.split.download(), {"graph splitCounters vs stream", p + " " + ps, 2}));
    }
    EXPECT_TRUE(bitsEqual(plainPool, g.pool.data.download(), {"graph pool vs stream", p, 384, dt}));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
}

TYPED_TEST(DecodeTest, CudaGraphReplayEqualsStream) {
    // 2390 + 23 steps: the floor edge is crossed in steps 10..14.
    graphReplayEqualsStream<typename TypeParam::T>(TypeParam::kDt, 24, 2390);
}

TYPED_TEST(DecodeTest, CudaGraphReplayFewSteps) {
    // The same graph replay in 4 steps (2401..2403 at the floor edge, then 2404 invalid), small enough for
    // racecheck (run_all.sh --sanitize), which tracks every shared-memory access of B1, B2 and B3.
    graphReplayEqualsStream<typename TypeParam::T>(TypeParam::kDt, 4, 2401);
}

TYPED_TEST(DecodeTest, LongContextsFromRandomPool) {
    // ctx up to 32772 (8193 blocks) from a random pool state; a few steps.
    using T = typename TypeParam::T;
    DType dt = TypeParam::kDt;
    int32_t const B = 4, maxBlocks = 8200, pagesPerSeq = 257;
    Rng rng(4);
    ref::PoolDims dims{B * pagesPerSeq, pagesPerSeq, 1, 256, 128};
    ref::HostPool hp = makeHostPool(dt, B, dims, Pages::kFull, rng);
    std::vector<float> cs = makeCosSin(32800);
    std::vector<uint16_t> wQ = makeGamma(dt, Gamma::kSmall, rng), wK = makeGamma(dt, Gamma::kSmall, rng);
    GpuDecode<T> g(hp, cs, wQ, wK, B, maxBlocks, B);
    std::vector<int32_t> ctx = {32767, 20001, 4096, 8190};
    for (int32_t s = 0; s < 3; ++s) {
        std::vector<uint16_t> qk = randomT(dt, size_t(B) * ref::kQkWidth, Mode::kNormal, rng);
        std::vector<int32_t> sc(size_t(B) * dims.numKVHeads, 9);
        std::string p = params(dtName(dt), " ctx=", ctxStr(ctx), " maxBlocks=", maxBlocks, " ", poolParams(dims));
        SCOPED_TRACE(p);
        ref::DecodeCase dc{dt, B, maxBlocks, qk, cs, ctx, wQ, wK, 1e-6f, hp, false, {}};
        ref::DecodeResult r = ref::runDecode(dc);
        g.run(dc, sc, 0xFF);
        EXPECT_TRUE(bitsEqual(r.outIdx, g.out.download(), {"decode outIdx", p, 2051}));
        EXPECT_TRUE(bitsEqual(r.poolAfter, g.pool.data.download(), {"pool", p, size_t(dims.poolHeadDim), dt}));
        hp.data = r.poolAfter;
        for (auto& c : ctx)
            ++c;
    }
}

} // namespace
} // namespace ktest
} // namespace qsa

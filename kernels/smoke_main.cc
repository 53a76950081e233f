// Differential smoke run of every launcher and both runners against the CPU reference (bit for bit),
// both dtypes, plus timings of the benchmark shapes. Not a test suite (that is the kernel-tests
// helper's gtest targets): it prints mismatches and a summary line "SMOKE PASS" / "SMOKE FAIL".
// Usage: smoke_main [--perf]
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/qsaIndexerKernels.h"
#include "kernels/qsaInternal.h"
#include "reference/numerics.h"
#include "reference/stages.h"

// Only pointers to T cross this file: the CUDA half / bf16 headers need the device toolchain.
struct __half;
struct __nv_bfloat16;

using namespace trt_edgellm::kernel;
namespace ref = qsa::ref;
using ref::DType;

namespace {

int gFailures = 0;

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);                       \
            std::exit(2);                                                                                              \
        }                                                                                                              \
    } while (0)

template <typename V>
struct Dev {
    V* p = nullptr;
    size_t n = 0;
    explicit Dev(size_t count) : n(count) { CK(cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(V))); }
    Dev(std::vector<V> const& h) : Dev(h.size()) { up(h); }
    ~Dev() { cudaFree(p); }
    void up(std::vector<V> const& h) { CK(cudaMemcpy(p, h.data(), h.size() * sizeof(V), cudaMemcpyHostToDevice)); }
    std::vector<V> down() const {
        std::vector<V> h(n);
        CK(cudaMemcpy(h.data(), p, n * sizeof(V), cudaMemcpyDeviceToHost));
        return h;
    }
    void fill(uint8_t byte) { CK(cudaMemset(p, byte, std::max<size_t>(1, n) * sizeof(V))); }
};

template <typename V>
uint32_t bitsOf(V v) {
    uint32_t u = 0;
    std::memcpy(&u, &v, sizeof(V));
    return u;
}

template <typename V>
void compare(std::string const& what, std::vector<V> const& gpu, std::vector<V> const& cpu) {
    size_t bad = 0;
    size_t first = 0;
    size_t const n = std::min(gpu.size(), cpu.size());
    for (size_t i = 0; i < n; ++i) {
        if (bitsOf(gpu[i]) != bitsOf(cpu[i])) {
            if (bad < 5) {
                std::printf("  %s[%zu]: gpu 0x%08x cpu 0x%08x\n", what.c_str(), i, bitsOf(gpu[i]), bitsOf(cpu[i]));
            }
            if (bad == 0) {
                first = i;
            }
            ++bad;
        }
    }
    if (gpu.size() != cpu.size()) {
        std::printf("  %s: size gpu %zu cpu %zu\n", what.c_str(), gpu.size(), cpu.size());
        ++bad;
    }
    std::printf("%-44s %s (%zu mismatches of %zu%s)\n", what.c_str(), bad ? "FAIL" : "ok", bad, n,
                bad ? (", first " + std::to_string(first)).c_str() : "");
    gFailures += bad != 0;
}

std::mt19937 gRng(1234);

std::vector<uint16_t> randomT(DType dt, size_t n, float scale) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<uint16_t> v(n);
    for (auto& x : v) {
        x = ref::fromFloat(dt, nd(gRng));
    }
    return v;
}

std::vector<float> makeCosSin(int32_t positions) {
    std::vector<float> cs(static_cast<size_t>(positions) * 64);
    for (int32_t p = 0; p < positions; ++p) {
        for (int i = 0; i < 32; ++i) {
            float const inv = std::pow(10000.0f, -static_cast<float>(i) / 32.0f);
            cs[p * 64 + i] = std::cos(p * inv);
            cs[p * 64 + 32 + i] = std::sin(p * inv);
        }
    }
    return cs;
}

// Pool with numPages pages per plane; the page table maps slot s of sequence b to a shuffled page, with a
// few holes (-1), one out-of-plane entry, and random (finite) pool contents.
ref::HostPool makePool(DType dt, int32_t B, int32_t maxPagesPerSeq, bool holes) {
    ref::HostPool p;
    p.dims.numPages = B * maxPagesPerSeq + 3;
    p.dims.maxPagesPerSeq = maxPagesPerSeq;
    p.dims.numKVHeads = 2;
    p.dims.poolHeadDim = 384;
    p.dims.headSize = 256;
    std::vector<int32_t> perm(p.dims.numPages);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gRng);
    p.pageTable.assign(static_cast<size_t>(B) * 2 * maxPagesPerSeq, -1);
    int k = 0;
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t s = 0; s < maxPagesPerSeq; ++s, ++k) {
            p.pageTable[(b * 2 + 0) * maxPagesPerSeq + s] = perm[k];
            p.pageTable[(b * 2 + 1) * maxPagesPerSeq + s] = perm[k] + p.dims.numPages;
        }
    }
    if (holes && maxPagesPerSeq > 2) {
        p.pageTable[(0 * 2 + 0) * maxPagesPerSeq + 1] = -1;                            // K hole
        p.pageTable[(0 * 2 + 1) * maxPagesPerSeq + 2] = -1;                            // V hole
        p.pageTable[((B - 1) * 2 + 1) * maxPagesPerSeq + 1] = perm[0];                 // V entry outside its plane
        p.pageTable[((B - 1) * 2 + 0) * maxPagesPerSeq + 2] = 2 * p.dims.numPages + 5; // K entry outside
    }
    p.data = randomT(dt, static_cast<size_t>(2) * p.dims.numPages * 128 * 2 * 384, 1.0f);
    return p;
}

QsaIndexerPoolState poolState(ref::HostPool const& p, void* dPool, int32_t const* dTable) {
    return QsaIndexerPoolState{
        dPool, dTable, p.dims.maxPagesPerSeq, p.dims.numPages, p.dims.numKVHeads, p.dims.poolHeadDim, p.dims.headSize};
}

template <typename T>
char const* tname() {
    return std::is_same<T, __half>::value ? "half" : "bf16";
}

// ---------------------------------------------------------------------------------------------
template <typename T>
void stagesPrefill(DType dt, int32_t B, int32_t S, std::vector<int32_t> ctx) {
    std::printf("-- prefill stages %s B=%d S=%d\n", tname<T>(), B, S);
    int32_t const MB = (S + 3) / 4;
    auto indexQk = randomT(dt, static_cast<size_t>(B) * S * 640, 1.0f);
    // Poison padded rows: NaN / Inf there must change nothing.
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t t = std::max(0, std::min(ctx[b], S)); t < S; ++t) {
            for (int d = 0; d < 640; ++d) {
                indexQk[(static_cast<size_t>(b) * S + t) * 640 + d] = (d & 1) ? 0x7E01 : 0xFC00;
            }
        }
    }
    auto wQ = randomT(dt, 128, 0.5f);
    auto wK = randomT(dt, 128, 0.5f);
    wQ[5] = dt == DType::kHalf ? 0x7BFF : 0x7F7F; // huge gamma: products overflow to inf
    auto cosSin = makeCosSin(S);
    float const eps = 1e-6f;
    Dev<uint16_t> dQk(indexQk), dWq(wQ), dWk(wK);
    Dev<float> dCs(cosSin);
    Dev<int32_t> dCtx(ctx);
    T const* qk = reinterpret_cast<T const*>(dQk.p);

    // K1a
    Dev<uint16_t> dQn(static_cast<size_t>(B) * S * 512);
    dQn.fill(0xAB);
    launchQsaQPrep<T>(reinterpret_cast<T*>(dQn.p), qk, dCs.p, dCtx.p, reinterpret_cast<T const*>(dWq.p), eps, B, S, 0);
    std::vector<uint16_t> qn(dQn.n);
    ref::qPrep(dt, qn.data(), indexQk.data(), cosSin.data(), ctx.data(), wQ.data(), eps, B, S);
    compare("K1a qNormed", dQn.down(), qn);

    // K1b dense, whole range and a sub-range with pastLen
    Dev<uint16_t> dKb(static_cast<size_t>(B) * MB * 128);
    dKb.fill(0xCD);
    launchQsaKCompress<T>(reinterpret_cast<T*>(dKb.p), qk, dCs.p, dCtx.p, reinterpret_cast<T const*>(dWk.p), eps, B, S,
                          MB, 0, MB, 0, 0);
    std::vector<uint16_t> kb(dKb.n);
    ref::kCompress(dt, kb.data(), indexQk.data(), cosSin.data(), ctx.data(), wK.data(), eps, B, S, MB, 0, MB, 0);
    compare("K1b kbar", dKb.down(), kb);

    // K1b paged + raw-k tail scatter
    int32_t const maxPages = (S + 127) / 128 + 1;
    ref::HostPool pool = makePool(dt, B, maxPages, true);
    Dev<uint16_t> dPool(pool.data);
    Dev<int32_t> dTable(pool.pageTable);
    QsaIndexerPoolState const ps = poolState(pool, dPool.p, dTable.p);
    std::vector<uint16_t> poolCpu = pool.data;
    ref::PoolView pv{poolCpu.data(), pool.pageTable.data(), pool.dims};
    dKb.fill(0xCD);
    launchQsaKCompressPaged<T>(reinterpret_cast<T*>(dKb.p), qk, dCs.p, dCtx.p, reinterpret_cast<T const*>(dWk.p), eps,
                               B, S, MB, 0, MB, 0, ps, 0);
    launchQsaRawKTailScatter<T>(qk, dCtx.p, B, S, ps, 0);
    std::vector<uint16_t> kb2(dKb.n);
    ref::kCompressPaged(dt, kb2.data(), indexQk.data(), cosSin.data(), ctx.data(), wK.data(), eps, B, S, MB, 0, MB, 0,
                        pv);
    ref::rawKTailScatter(dt, indexQk.data(), ctx.data(), B, S, pv);
    compare("K1b paged kbar", dKb.down(), kb2);
    compare("K1b paged + scatter pool", dPool.down(), poolCpu);

    // idsFill
    int32_t const rows = B * S;
    Dev<int32_t> dIds(static_cast<size_t>(rows) * MB);
    launchQsaIdsFill(dIds.p, rows, MB, 0);
    std::vector<int32_t> ids(dIds.n);
    ref::idsFill(ids.data(), rows, MB);
    compare("idsFill", dIds.down(), ids);

    // K2 over a sub-range and the whole range (inputs: the CPU K1 outputs)
    Dev<uint16_t> dQn2(qn), dKb2(kb);
    int32_t const rb = rows / 3, re = rows - 1;
    Dev<float> dLog(static_cast<size_t>(re - rb) * MB);
    dLog.fill(0x7F);
    launchQsaScores<T>(dLog.p, reinterpret_cast<T const*>(dQn2.p), reinterpret_cast<T const*>(dKb2.p), dCtx.p, B, S, rb,
                       re, 0);
    std::vector<float> lg(dLog.n);
    ref::scores(dt, lg.data(), qn.data(), kb.data(), ctx.data(), B, S, rb, re);
    compare("K2 logits (sub-range)", dLog.down(), lg);
    Dev<float> dLogAll(static_cast<size_t>(rows) * MB);
    launchQsaScores<T>(dLogAll.p, reinterpret_cast<T const*>(dQn2.p), reinterpret_cast<T const*>(dKb2.p), dCtx.p, B, S,
                       0, rows, 0);
    std::vector<float> lgAll(dLogAll.n);
    ref::scores(dt, lgAll.data(), qn.data(), kb.data(), ctx.data(), B, S, 0, rows);
    compare("K2 logits (all)", dLogAll.down(), lgAll);

    // Sort whole rows; add ties and -0.0 / NaN host-written keys in row 0
    std::vector<float> keys = lgAll;
    for (int32_t g = 0; g < MB; g += 3) {
        keys[g] = 1.5f;
    }
    if (MB > 4) {
        keys[1] = -0.0f;
        keys[2] = 0.0f;
        keys[4] = ref::bitsFloat(0x7FC00001u);
    }
    Dev<float> dKeys(keys), dKeysOut(keys.size());
    Dev<int32_t> dValsOut(keys.size());
    size_t const tb = getQsaSortTempBytes(rows, MB);
    Dev<uint8_t> dTemp(tb);
    launchQsaSortRows(dKeys.p, dKeysOut.p, dIds.p, dValsOut.p, rows, MB, dTemp.p, tb, 0);
    std::vector<float> ko(keys.size());
    std::vector<int32_t> vo(keys.size());
    ref::sortRows(keys.data(), ko.data(), ids.data(), vo.data(), rows, MB);
    compare("sort keys", dKeysOut.down(), ko);
    compare("sort values", dValsOut.down(), vo);
    compare("sort keysIn unchanged", dKeys.down(), keys);

    // K4
    Dev<int32_t> dSorted(vo);
    Dev<int32_t> dOut(static_cast<size_t>(rows) * 2051);
    dOut.fill(0x55);
    launchQsaExpand(dOut.p, dSorted.p, dCtx.p, B, S, 0, rows, 0);
    std::vector<int32_t> out(dOut.n, 0x55555555);
    ref::expand(out.data(), vo.data(), ctx.data(), B, S, 0, rows);
    compare("K4 outIdx", dOut.down(), out);
}

// ---------------------------------------------------------------------------------------------
template <typename T>
void pipelinePrefill(DType dt, int32_t B, int32_t S, std::vector<int32_t> ctx, bool withPool) {
    std::printf("-- prefill pipeline %s B=%d S=%d pool=%d\n", tname<T>(), B, S, withPool);
    ref::PrefillCase c;
    c.dtype = dt;
    c.batchSize = B;
    c.seqLen = S;
    c.indexQk = randomT(dt, static_cast<size_t>(B) * S * 640, 1.0f);
    c.cosSin = makeCosSin(S);
    c.contextLengths = ctx;
    c.wQ = randomT(dt, 128, 0.5f);
    c.wK = randomT(dt, 128, 0.5f);
    c.hasPool = withPool;
    int32_t const maxPages = (S + 127) / 128 + 1;
    if (withPool) {
        c.pool = makePool(dt, B, maxPages, false);
    }
    Dev<uint16_t> dQk(c.indexQk), dWq(c.wQ), dWk(c.wK);
    Dev<float> dCs(c.cosSin);
    Dev<int32_t> dCtx{ctx};
    Dev<int32_t> dOut(static_cast<size_t>(B) * S * 2051);
    size_t const ws = getQsaIndexerWorkspaceSize(B, S);
    Dev<uint8_t> dWs(ws);
    dWs.fill(0xFF); // results never depend on what the workspace held
    Dev<uint16_t> dPool(withPool ? c.pool.data : std::vector<uint16_t>(1));
    Dev<int32_t> dTable(withPool ? c.pool.pageTable : std::vector<int32_t>(1));
    QsaIndexerPoolState ps = poolState(c.pool, dPool.p, dTable.p);
    runQsaIndexerPrefill<T>(dOut.p, reinterpret_cast<T const*>(dQk.p), dCs.p, dCtx.p, reinterpret_cast<T const*>(dWq.p),
                            reinterpret_cast<T const*>(dWk.p), c.rmsEps, dWs.p, ws, B, S, withPool ? &ps : nullptr, 0);
    CK(cudaDeviceSynchronize());
    ref::PrefillResult r = ref::runPrefill(c);
    compare("prefill outIdx", dOut.down(), r.outIdx);
    if (withPool) {
        compare("prefill pool", dPool.down(), r.poolAfter);
    }
}

// ---------------------------------------------------------------------------------------------
template <typename T>
void pipelineDecode(DType dt, std::vector<int32_t> ctx, int32_t maxBlocks, bool ties, bool stages) {
    int32_t const B = static_cast<int32_t>(ctx.size());
    std::printf("-- decode %s B=%d maxBlocks=%d ties=%d\n", tname<T>(), B, maxBlocks, ties);
    ref::DecodeCase c;
    c.dtype = dt;
    c.batchSize = B;
    c.maxBlocks = maxBlocks;
    c.indexQk = randomT(dt, static_cast<size_t>(B) * 640, 1.0f);
    int32_t maxCtx = 1;
    for (auto x : ctx) {
        maxCtx = std::max(maxCtx, x);
    }
    c.cosSin = makeCosSin(maxCtx + 1);
    c.contextLengths = ctx;
    c.wQ = randomT(dt, 128, 0.5f);
    c.wK = randomT(dt, 128, 0.5f);
    int32_t const maxPages = (maxBlocks * 4 + 127) / 128 + 1;
    c.pool = makePool(dt, B, maxPages, true);
    if (ties) {
        // Few distinct kbar rows in the V-tails: many equal logits.
        for (size_t i = 0; i < c.pool.data.size(); ++i) {
            c.pool.data[i] = ref::fromFloat(dt, static_cast<float>((i / 768) % 3));
        }
    }
    c.hasSplitCounters = true;
    c.splitCounters.assign(static_cast<size_t>(B) * 2, 77);
    Dev<uint16_t> dQk(c.indexQk), dWq(c.wQ), dWk(c.wK), dPool(c.pool.data);
    Dev<float> dCs(c.cosSin);
    Dev<int32_t> dCtx(ctx), dTable(c.pool.pageTable), dSplit(c.splitCounters);
    Dev<int32_t> dOut(static_cast<size_t>(B) * 2051);
    size_t const ws = getQsaIndexerDecodeWorkspaceSize(B, maxBlocks);
    Dev<uint8_t> dWs(ws);
    QsaIndexerPoolState ps = poolState(c.pool, dPool.p, dTable.p);
    T const* qk = reinterpret_cast<T const*>(dQk.p);
    runQsaIndexerDecode<T>(dOut.p, qk, dCs.p, dCtx.p, reinterpret_cast<T const*>(dWq.p),
                           reinterpret_cast<T const*>(dWk.p), c.rmsEps, ps, dSplit.p, dWs.p, ws, B, maxBlocks, 0);
    CK(cudaDeviceSynchronize());
    ref::DecodeResult r = ref::runDecode(c);
    compare("decode outIdx", dOut.down(), r.outIdx);
    compare("decode pool", dPool.down(), r.poolAfter);
    auto sc = dSplit.down();
    sc.resize(r.splitCountersAfter.size());
    compare("decode splitCounters", sc, r.splitCountersAfter);
    if (!stages) {
        return;
    }
    // Stage by stage on the pool BEFORE the step.
    dPool.up(c.pool.data);
    std::vector<uint16_t> poolCpu = c.pool.data;
    ref::PoolView pv{poolCpu.data(), c.pool.pageTable.data(), c.pool.dims};
    Dev<uint16_t> dQn(static_cast<size_t>(B) * 512);
    launchQsaDecodePrep<T>(reinterpret_cast<T*>(dQn.p), qk, dCs.p, dCtx.p, reinterpret_cast<T const*>(dWq.p),
                           reinterpret_cast<T const*>(dWk.p), c.rmsEps, ps, B, maxBlocks, 0);
    std::vector<uint16_t> qn(dQn.n);
    ref::decodePrep(dt, qn.data(), c.indexQk.data(), c.cosSin.data(), ctx.data(), c.wQ.data(), c.wK.data(), c.rmsEps,
                    pv, B, maxBlocks);
    compare("B1 qNormed", dQn.down(), qn);
    compare("B1 pool", dPool.down(), poolCpu);
    Dev<float> dLog(static_cast<size_t>(B) * maxBlocks);
    std::vector<float> lg(dLog.n, -FLT_MAX);
    dLog.up(lg);
    launchQsaDecodeScores<T>(dLog.p, dQn.p ? reinterpret_cast<T const*>(dQn.p) : nullptr, dCtx.p, ps, B, maxBlocks, 0);
    ref::decodeScores(dt, lg.data(), qn.data(), ctx.data(), pv, B, maxBlocks);
    auto lgGpu = dLog.down();
    compare("B2 logits", lgGpu, lg);
    // B3 on host-written logits with heavy ties at the threshold.
    std::vector<float> lt(lg.size());
    for (size_t i = 0; i < lt.size(); ++i) {
        lt[i] = static_cast<float>(static_cast<int>(i * 2654435761u % 7)) * 0.25f;
    }
    if (lt.size() > 10) {
        lt[3] = -0.0f;
        lt[7] = ref::bitsFloat(0x7FC00000u);
        lt[8] = -1.0f;
    }
    Dev<float> dLt(lt);
    launchQsaDecodeSelect(dOut.p, dLt.p, dCtx.p, B, maxBlocks, 0);
    std::vector<int32_t> o(dOut.n);
    ref::decodeSelect(o.data(), lt.data(), ctx.data(), B, maxBlocks);
    compare("B3 outIdx (ties)", dOut.down(), o);
}

// ---------------------------------------------------------------------------------------------
float timeMs(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

template <typename F>
float medianMs(F&& f, int runs) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) {
        f();
    }
    std::vector<float> t;
    for (int i = 0; i < runs; ++i) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        t.push_back(timeMs(a, b));
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[t.size() / 2];
}

void perfPrefill(int32_t B, int32_t S, bool check) {
    DType const dt = DType::kHalf;
    ref::PrefillCase c;
    c.dtype = dt;
    c.batchSize = B;
    c.seqLen = S;
    c.indexQk = randomT(dt, static_cast<size_t>(B) * S * 640, 1.0f);
    c.cosSin = makeCosSin(S);
    c.contextLengths.assign(B, S);
    c.wQ = randomT(dt, 128, 0.5f);
    c.wK = randomT(dt, 128, 0.5f);
    Dev<uint16_t> dQk(c.indexQk), dWq(c.wQ), dWk(c.wK);
    Dev<float> dCs(c.cosSin);
    Dev<int32_t> dCtx(c.contextLengths);
    Dev<int32_t> dOut(static_cast<size_t>(B) * S * 2051);
    size_t const ws = getQsaIndexerWorkspaceSize(B, S);
    Dev<uint8_t> dWs(ws);
    auto run = [&] {
        runQsaIndexerPrefill<__half>(dOut.p, reinterpret_cast<__half const*>(dQk.p), dCs.p, dCtx.p,
                                     reinterpret_cast<__half const*>(dWq.p), reinterpret_cast<__half const*>(dWk.p),
                                     c.rmsEps, dWs.p, ws, B, S, nullptr, 0);
    };
    float const ms = medianMs(run, 20);
    // Stage split: K1 only, and K2 over everything (with invisible writes skipped, as the runner does).
    int32_t const MB = (S + 3) / 4;
    auto k1 = [&] {
        launchQsaQPrep<__half>(reinterpret_cast<__half*>(dWs.p), reinterpret_cast<__half const*>(dQk.p), dCs.p, dCtx.p,
                               reinterpret_cast<__half const*>(dWq.p), c.rmsEps, B, S, 0);
    };
    float const msK1 = medianMs(k1, 10);
    // Stage split of the chunk loop (same buffers the runner uses).
    namespace d = trt_edgellm::kernel::qsa_detail;
    int64_t const rows = static_cast<int64_t>(B) * S;
    int64_t const Rc = std::min<int64_t>(rows, std::max<int64_t>(8388608 / MB, 256));
    size_t const kbOff = ((rows * 1024 + 127) / 128) * 128;
    __half const* qn = reinterpret_cast<__half const*>(dWs.p);
    __half const* kb = reinterpret_cast<__half const*>(dWs.p + kbOff);
    Dev<float> kA(Rc * MB);
    float const msK2 = medianMs(
        [&] {
            for (int64_t r0 = 0; r0 < rows; r0 += Rc) {
                d::launchScoresImpl<__half>("perf", kA.p, nullptr, qn, kb, dCtx.p, B, S, r0, std::min(rows, r0 + Rc),
                                            false, 0);
            }
        },
        5);
    Dev<int32_t> outScratch(rows * 2051);
    float const msSel = medianMs(
        [&] {
            for (int64_t r0 = 0; r0 < rows; r0 += Rc) {
                d::launchPrefillSelectExpand(outScratch.p, kA.p, dCtx.p, S, r0, std::min(rows, r0 + Rc), 0);
            }
        },
        5);
    double flop = 0;
    for (int64_t t = 0; t < S; ++t) {
        flop += 1024.0 * ((t + 1) / 4);
    }
    flop *= B;
    std::printf(
        "PERF prefill half B=%d S=%d: median %.3f ms (K1a %.3f, K2 %.3f = %.1f TFLOP/s, select+sort+expand %.3f),"
        " workspace %.1f MiB, MB=%d\n",
        B, S, ms, msK1, msK2, flop / msK2 / 1e9, msSel, ws / 1048576.0, MB);
    if (check) {
        CK(cudaDeviceSynchronize());
        auto out = dOut.down();
        std::vector<int64_t> rows;
        for (int i = 0; i < 24; ++i) {
            rows.push_back((static_cast<int64_t>(B) * S - 1) * i / 23);
        }
        auto want = ref::runPrefillRows(c, rows);
        std::vector<int32_t> got;
        for (auto r : rows) {
            got.insert(got.end(), out.begin() + r * 2051, out.begin() + (r + 1) * 2051);
        }
        compare("perf prefill sampled rows", got, want);
    }
}

void perfDecode(int32_t B, int32_t ctxLen) {
    DType const dt = DType::kHalf;
    int32_t const maxBlocks = (ctxLen + 3) / 4;
    auto indexQk = randomT(dt, static_cast<size_t>(B) * 640, 1.0f);
    auto wQ = randomT(dt, 128, 0.5f), wK = randomT(dt, 128, 0.5f);
    auto cs = makeCosSin(ctxLen);
    int32_t const maxPages = (ctxLen + 127) / 128;
    ref::HostPool pool;
    pool.dims = {B * maxPages, maxPages, 2, 384, 256};
    pool.pageTable.resize(static_cast<size_t>(B) * 2 * maxPages);
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t s = 0; s < maxPages; ++s) {
            pool.pageTable[(b * 2) * maxPages + s] = b * maxPages + s;
            pool.pageTable[(b * 2 + 1) * maxPages + s] = b * maxPages + s + pool.dims.numPages;
        }
    }
    size_t const poolElems = static_cast<size_t>(2) * pool.dims.numPages * 128 * 2 * 384;
    Dev<uint16_t> dPool(poolElems);
    {
        std::vector<uint16_t> chunk = randomT(dt, 1 << 22, 1.0f);
        for (size_t off = 0; off < poolElems; off += chunk.size()) {
            size_t const n = std::min(chunk.size(), poolElems - off);
            CK(cudaMemcpy(dPool.p + off, chunk.data(), n * 2, cudaMemcpyHostToDevice));
        }
    }
    Dev<int32_t> dTable(pool.pageTable);
    Dev<uint16_t> dQk(indexQk), dWq(wQ), dWk(wK);
    Dev<float> dCs(cs);
    Dev<int32_t> dCtx(std::vector<int32_t>(B, ctxLen - 1)); // ctx % 4 == 3: no pool write changes the step
    Dev<int32_t> dOut(static_cast<size_t>(B) * 2051), dSplit(static_cast<size_t>(B) * 2);
    size_t const ws = getQsaIndexerDecodeWorkspaceSize(B, maxBlocks);
    Dev<uint8_t> dWs(ws);
    QsaIndexerPoolState ps{dPool.p, dTable.p, maxPages, pool.dims.numPages, 2, 384, 256};
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto run = [&](cudaStream_t st) {
        runQsaIndexerDecode<__half>(dOut.p, reinterpret_cast<__half const*>(dQk.p), dCs.p, dCtx.p,
                                    reinterpret_cast<__half const*>(dWq.p), reinterpret_cast<__half const*>(dWk.p),
                                    1e-6f, ps, dSplit.p, dWs.p, ws, B, maxBlocks, st);
    };
    float const msPlain = medianMs([&] { run(0); }, 50);
    CK(cudaDeviceSynchronize());
    auto plainOut = dOut.down();
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    run(s);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    float const msGraph = medianMs([&] { CK(cudaGraphLaunch(ge, 0)); }, 50);
    CK(cudaDeviceSynchronize());
    compare("decode graph replay == plain", dOut.down(), plainOut);
    // stage split
    float* logits =
        reinterpret_cast<float*>(reinterpret_cast<char*>(dWs.p) + ((static_cast<size_t>(B) * 1024 + 127) / 128) * 128);
    float const msB2 = medianMs(
        [&] {
            launchQsaDecodeScores<__half>(logits, reinterpret_cast<__half const*>(dWs.p), dCtx.p, ps, B, maxBlocks, 0);
        },
        50);
    float const msB3 = medianMs([&] { launchQsaDecodeSelect(dOut.p, logits, dCtx.p, B, maxBlocks, 0); }, 50);
    double const kbarBytes = static_cast<double>(B) * (ctxLen / 4) * 256;
    std::printf("PERF decode half B=%d ctx=%d: plain %.4f ms, graph %.4f ms, B2 %.4f ms (%.0f GB/s kbar), B3 %.4f ms\n",
                B, ctxLen, msPlain, msGraph, msB2, kbarBytes / msB2 / 1e6, msB3);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}

void checkThrows(char const* what, std::function<void()> f, char const* needle) {
    try {
        f();
        std::printf("%-44s FAIL (no throw)\n", what);
        ++gFailures;
    } catch (std::runtime_error const& e) {
        bool const ok = std::strstr(e.what(), needle) != nullptr;
        std::printf("%-44s %s: %s\n", what, ok ? "ok" : "FAIL", e.what());
        gFailures += !ok;
    }
}

} // namespace

int main(int argc, char** argv) {
    bool const perf = argc > 1 && std::string(argv[1]) == "--perf";
    int dev = 0;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    std::printf("device %s sm_%d%d\n", prop.name, prop.major, prop.minor);

    // CUB query (runner's DoubleBuffer form) across shapes: the workspace slot must be monotone in S.
    for (int64_t S : {4, 100, 1000, 4096, 8192, 32768, 65536, 131072}) {
        int64_t const MB = (S + 3) / 4;
        int64_t const Rc = std::min<int64_t>(S, std::max<int64_t>(8388608 / MB, 256));
        std::printf("cub DB query S=%lld Rc=%lld MB=%lld: %zu bytes; stage query(Rc,MB) %zu\n", (long long)S,
                    (long long)Rc, (long long)MB, trt_edgellm::kernel::qsa_detail::sortDoubleBufferTempBytes(Rc, MB),
                    getQsaSortTempBytes(static_cast<int32_t>(Rc), static_cast<int32_t>(MB)));
    }

    stagesPrefill<__half>(DType::kHalf, 3, 37, {37, 0, 22});
    stagesPrefill<__nv_bfloat16>(DType::kBf16, 3, 37, {37, -5, 23});
    stagesPrefill<__half>(DType::kHalf, 2, 2600, {2600, 2051});
    stagesPrefill<__nv_bfloat16>(DType::kBf16, 2, 2600, {9999, 2049});
    pipelinePrefill<__half>(DType::kHalf, 2, 2600, {2600, 2051}, true);
    pipelinePrefill<__nv_bfloat16>(DType::kBf16, 3, 2101, {2101, 7, 2050}, true);
    pipelinePrefill<__half>(DType::kHalf, 1, 9000, {8999}, false);
    pipelinePrefill<__half>(DType::kHalf, 14, 130, {130, 1, 2, 3, 4, 5, 6, 7, 8, 9, 129, 128, 127, 0}, false);
    pipelineDecode<__half>(DType::kHalf, {1, 2, 3, 4, 5, 2047, 2048, 2049, 2052, 2053, 4000, 0, 99999, 4096}, 1024,
                           false, true);
    pipelineDecode<__nv_bfloat16>(DType::kBf16, {2048, 2052, 3001, 4096, 4095, 8, 4097}, 1100, false, true);
    pipelineDecode<__half>(DType::kHalf, {4096, 4095, 3000}, 1024, true, true);

    // Argument validation
    checkThrows(
        "prefill null outIdx",
        [] {
            runQsaIndexerPrefill<__half>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0.f, nullptr, 0, 1, 1,
                                         nullptr, 0);
        },
        "outIdx");
    checkThrows(
        "prefill size 0", [] { getQsaIndexerWorkspaceSize(0, 10); }, "batchSize");
    checkThrows(
        "decode size maxBlocks", [] { getQsaIndexerDecodeWorkspaceSize(1, -1); }, "maxBlocks");
    {
        Dev<uint8_t> w(1 << 20);
        int32_t* o = reinterpret_cast<int32_t*>(w.p);
        __half const* h = reinterpret_cast<__half const*>(w.p);
        float const* f = reinterpret_cast<float const*>(w.p);
        checkThrows(
            "prefill small workspace",
            [&] { runQsaIndexerPrefill<__half>(o, h, f, o, h, h, 0.f, w.p, 100, 1, 8, nullptr, 0); },
            "below the required");
        checkThrows(
            "prefill misaligned workspace",
            [&] { runQsaIndexerPrefill<__half>(o, h, f, o, h, h, 0.f, w.p + 8, 1 << 19, 1, 8, nullptr, 0); },
            "128-byte");
        QsaIndexerPoolState bad{w.p, o, 4, 8, 2, 300, 256};
        checkThrows(
            "decode bad pool headSize",
            [&] { runQsaIndexerDecode<__half>(o, h, f, o, h, h, 0.f, bad, nullptr, w.p, 1 << 19, 1, 4, 0); },
            "poolHeadDim");
    }

    if (perf) {
        perfPrefill(1, 8192, true);
        perfPrefill(8, 4096, true);
        perfPrefill(1, 32768, true);
        perfDecode(64, 131072);
        perfDecode(1, 131072);
    }
    std::printf("%s (%d failing checks)\n", gFailures ? "SMOKE FAIL" : "SMOKE PASS", gFailures);
    return gFailures ? 1 : 0;
}

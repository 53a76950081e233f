// //kernels:bench: times the prefill and decode runners and each stage launcher with
// CUDA events (median of >= 20 runs after warm-up), measures the machine's FP32 FMA rate and copy
// bandwidth in the same run, and prints the time over the floor:
//   K2 floor     = 1024 FLOP * sum over rows of floor((t + 1) / 4) / FMA rate
//   sort floor   = 16 bytes per sorted pair / bandwidth (pairs: each row's visible prefix, nVis)
//   decode floor = B * ctx / 4 * 256 bytes of kbar / bandwidth
// Usage: bench [--runs N] [--dtype half|bf16]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench_floor.h"
#include "kernels/qsaIndexerKernels.h"
#include "kernels/qsaIndexerRunner.h"
#include "kernels/qsaInternal.h"
#include "testing/device_buffer.h"
#include "testing/inputs.h"

namespace kn = trt_edgellm::kernel;

namespace {

// The device buffers of one benchmark (testing/device_buffer.h), freed when it returns.
struct DeviceMemory {
    std::vector<qsa::testlib::DeviceBuffer<uint8_t>> buffers;
    template <typename E>
    E* alloc(size_t n) {
        buffers.emplace_back(n * sizeof(E));
        return reinterpret_cast<E*>(buffers.back().get());
    }
    // A device copy of `host`.
    template <typename E>
    E* upload(std::vector<E> const& host) {
        buffers.emplace_back(host);
        return reinterpret_cast<E*>(buffers.back().get());
    }
};

// The "before" column: the figures of issue 35's table (one H100, 2026-12-06, //kernels:bench of b34f06e, half,
// median of 20; FP32 FMA 64.71 TFLOP/s, copy 3.01 TB/s in that run), printed beside each new measurement so that a
// run shows the change without a second binary. On another GPU compare with the same-run rows instead (decode:
// "three launches"). Keyed by "<dtype> <case>|<row>"; "-" where none was measured.
std::string before(std::string const& dt, std::string const& kase, std::string const& row) {
    static std::map<std::string, double> const t = {
        {"half prefill B=1 S=32768|total", 7.848},
        {"half prefill B=1 S=32768|K2 scores, runner form (visible tiles only)", 5.362},
        {"half prefill B=1 S=32768|fused", 2.559},
        {"half prefill B=8 S=4096|total", 1.102},
        {"half prefill B=8 S=4096|K2 scores, runner form (visible tiles only)", 0.667},
        {"half prefill B=8 S=4096|fused", 0.405},
        {"half prefill B=1 S=8192|total", 0.554},
        {"half prefill B=1 S=8192|K2 scores, runner form (visible tiles only)", 0.334},
        {"half prefill B=1 S=8192|fused", 0.208},
        {"half decode B=64|graph", 0.2436},
        {"half decode B=64|B2 decodeScores", 0.208},
        {"half decode B=64|B3 decodeSelect", 0.032},
        {"half decode B=1|graph", 0.0215},
        {"half decode B=1|B1 decodePrep", 0.0077},
        {"half decode B=1|B2 decodeScores", 0.0081},
        {"half decode B=1|B3 decodeSelect", 0.0141},
    };
    auto const it = t.find(dt + " " + kase + "|" + row);
    if (it == t.end()) {
        return "-";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", it->second);
    return buf;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Event pairs on one stream: lap() returns ms since the previous mark.
struct Laps {
    explicit Laps(cudaStream_t s) : s(s) {}
    ~Laps() {
        for (auto e : ev)
            cudaEventDestroy(e);
    }
    void mark(std::string const& name) {
        cudaEvent_t e;
        QSA_CUDA(cudaEventCreate(&e));
        QSA_CUDA(cudaEventRecord(e, s));
        ev.push_back(e);
        names.push_back(name);
    }
    // Sum per name of the time from the previous mark to the mark carrying that name.
    std::map<std::string, double> sums() {
        QSA_CUDA(cudaEventSynchronize(ev.back()));
        std::map<std::string, double> m;
        for (size_t i = 1; i < ev.size(); ++i) {
            float ms = 0;
            QSA_CUDA(cudaEventElapsedTime(&ms, ev[i - 1], ev[i]));
            m[names[i]] += ms;
        }
        return m;
    }
    cudaStream_t s;
    std::vector<cudaEvent_t> ev;
    std::vector<std::string> names;
};

// Milliseconds of each of `runs` calls of fn() on stream st.
template <typename F>
std::vector<double> timeRuns(int runs, cudaStream_t st, F fn) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
        Laps l(st);
        l.mark("start");
        fn();
        l.mark("t");
        t.push_back(l.sums()["t"]);
    }
    return t;
}

// fn(stream) captured once into a CUDA graph, 5 warm-up launches, then `runs` timed launches of the graph.
template <typename F>
std::vector<double> timeGraph(int runs, cudaStream_t st, F fn) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    QSA_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    fn(st);
    QSA_CUDA(cudaStreamEndCapture(st, &g));
    QSA_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < 5; ++i)
        QSA_CUDA(cudaGraphLaunch(ge, st));
    std::vector<double> const t = timeRuns(runs, st, [&] { QSA_CUDA(cudaGraphLaunch(ge, st)); });
    QSA_CUDA(cudaGraphExecDestroy(ge));
    QSA_CUDA(cudaGraphDestroy(g));
    return t;
}

struct Floors {
    double flops; // FLOP/s
    double bw;    // bytes/s (read + write)
    double bwMemcpy, bwKernel;
};

Floors measureFloors() {
    DeviceMemory mem;
    Floors f{};
    double flop = 0;
    double s = qsa::bench::timeFmaKernel(20, &flop);
    f.flops = flop / s;
    size_t bytes = size_t(1) << 30;
    char* a = mem.alloc<char>(bytes);
    char* b = mem.alloc<char>(bytes);
    QSA_CUDA(cudaMemset(a, 1, bytes));
    f.bwKernel = 2.0 * bytes * 20 / qsa::bench::timeCopyKernel(b, a, bytes, 20);
    f.bwMemcpy = 2.0 * bytes * 20 / qsa::bench::timeMemcpy(b, a, bytes, 20);
    f.bw = std::max(f.bwKernel, f.bwMemcpy);
    return f;
}

// The inputs of one runner call: indexQk [rows, 640], wQ and wK (one buffer of 256), the rope table for
// `positions` positions (testing/inputs.h) and contextLengths all `ctxLen`, outIdx [rows, 2051]. T inputs are
// filled on the device from seeds `seed` (indexQk) and seed + 1 (gammas).
template <typename T>
struct RunnerInputs {
    RunnerInputs(DeviceMemory& mem, int64_t rows, int32_t B, int32_t positions, int32_t ctxLen, uint32_t seed,
                 bool isBf16, cudaStream_t st)
        : qk(mem.alloc<uint16_t>(size_t(rows) * 640)), w(mem.alloc<uint16_t>(256)),
          cs(mem.upload(qsa::testlib::ropeTable(10000.0, positions))), ctx(mem.upload(std::vector<int32_t>(B, ctxLen))),
          out(mem.alloc<int32_t>(size_t(rows) * 2051)) {
        qsa::bench::fillRandomT(qk, size_t(rows) * 640, seed, isBf16, st);
        qsa::bench::fillRandomT(w, 256, seed + 1, isBf16, st);
    }
    T const* tq() const { return reinterpret_cast<T const*>(qk); }
    T const* tw() const { return reinterpret_cast<T const*>(w); }
    T const* twK() const { return reinterpret_cast<T const*>(w + 128); }
    uint16_t* qk;
    uint16_t* w;
    float* cs;
    int32_t* ctx;
    int32_t* out;
};

template <typename T>
void benchPrefill(char const* dtName, bool isBf16, int32_t B, int32_t S, int runs, Floors const& fl) {
    DeviceMemory mem;
    int32_t const MB = (S + 3) / 4;
    int64_t const rowsAll = int64_t(B) * S;
    int64_t const rc = std::min<int64_t>(rowsAll, std::max<int64_t>(8388608 / MB, 256));
    qsa::testlib::Stream stream;
    cudaStream_t const st = stream.get();
    RunnerInputs<T> const in(mem, rowsAll, B, S, S, 1, isBf16, st);
    int32_t* out = in.out;
    int32_t const* ctx = in.ctx;
    float const* cs = in.cs;
    T const *tq = in.tq(), *tw = in.tw(), *twK = in.twK();
    size_t wsBytes = kn::getQsaIndexerWorkspaceSize(B, S);
    auto* ws = mem.alloc<char>(wsBytes);
    auto runOnce = [&] {
        kn::runQsaIndexerPrefill<T>(out, tq, cs, ctx, tw, twK, 1e-6f, ws, wsBytes, B, S, nullptr, st);
    };
    for (int i = 0; i < 3; ++i)
        runOnce();
    std::vector<double> const total = timeRuns(runs, st, runOnce);
    // Each stage launcher on its own, same shapes, all chunks of Rc rows.
    auto* qn = mem.alloc<uint16_t>(size_t(rowsAll) * 512);
    auto* kb = mem.alloc<uint16_t>(size_t(B) * MB * 128);
    auto* keys = mem.alloc<float>(size_t(rc) * MB);
    auto* keysAlt = mem.alloc<float>(size_t(rc) * MB);
    auto* ids = mem.alloc<int32_t>(size_t(rc) * MB);
    auto* idsAlt = mem.alloc<int32_t>(size_t(rc) * MB);
    size_t tempBytes = kn::getQsaSortTempBytes(static_cast<int32_t>(rc), MB);
    auto* temp = mem.alloc<char>(tempBytes);
    auto* outCta = mem.alloc<int32_t>(size_t(rowsAll) * 2051);
    static char const kRunnerRow[] = "runner select+sort+K4 (fused; one warp per row where MB <= 2048)";
    static char const kCtaRow[] = "CTA-per-row select+sort+K4 (the runner's kernel before, at every MB)";
    std::map<std::string, std::vector<double>> stage;
    for (int r = -2; r < runs; ++r) {
        Laps l(st);
        l.mark("start");
        kn::launchQsaQPrep<T>(reinterpret_cast<T*>(qn), tq, cs, ctx, tw, 1e-6f, B, S, st);
        l.mark("K1a qPrep");
        kn::launchQsaKCompress<T>(reinterpret_cast<T*>(kb), tq, cs, ctx, twK, 1e-6f, B, S, MB, 0, MB, 0, st);
        l.mark("K1b kCompress");
        for (int64_t r0 = 0; r0 < rowsAll; r0 += rc) {
            int32_t r1 = static_cast<int32_t>(std::min(rowsAll, r0 + rc));
            int32_t n = r1 - static_cast<int32_t>(r0);
            kn::launchQsaIdsFill(ids, n, MB, st);
            l.mark("idsFill");
            kn::launchQsaScores<T>(keys, reinterpret_cast<T const*>(qn), reinterpret_cast<T const*>(kb), ctx, B, S,
                                   static_cast<int32_t>(r0), r1, st);
            l.mark("K2 scores");
            kn::launchQsaSortRows(keys, keysAlt, ids, idsAlt, n, MB, temp, tempBytes, st);
            l.mark("sort (whole rows)");
            kn::launchQsaExpand(out, idsAlt, ctx, B, S, static_cast<int32_t>(r0), r1, st);
            l.mark("K4 expand");
            // The runner's own selection: select + shared-memory sort + K4 in one pass per row, on K2's
            // logits (only the visible prefix is read). Not a public launcher; replaces idsFill, sort, K4.
            // K2 as the runner calls it: invisible entries not written, CTAs only for tiles some row sees.
            kn::qsa_detail::launchScoresImpl<T>("bench", keys, reinterpret_cast<T const*>(qn),
                                                reinterpret_cast<T const*>(kb), ctx, B, S, r0, r1,
                                                /*writeInvisible=*/false, st);
            l.mark("K2 scores, runner form (visible tiles only)");
            kn::qsa_detail::launchPrefillSelectExpand(out, keys, ctx, S, r0, r1, st,
                                                      kn::qsa_detail::PrefillSelectKernel::WarpPerRow);
            l.mark(kRunnerRow);
            // The CTA-per-row kernel (the runner's before; still its kernel where MB > 2048), on the same
            // logits, into its own rows: timed, and compared with the runner's bits below.
            kn::qsa_detail::launchPrefillSelectExpand(outCta, keys, ctx, S, r0, r1, st,
                                                      kn::qsa_detail::PrefillSelectKernel::CtaPerRow);
            l.mark(kCtaRow);
        }
        if (r < 0) {
            l.sums();
            continue;
        }
        for (auto const& kv : l.sums())
            stage[kv.first].push_back(kv.second);
    }
    // Floors.
    // Each row's visible blocks floor((t + 1) / 4): K2's dot products and the sorted pairs.
    double visPairs = 0;
    for (int32_t b = 0; b < B; ++b) {
        for (int64_t t = 0; t < S; ++t)
            visPairs += double((t + 1) / 4);
    }
    double const rowsFlop = visPairs;
    double k2Floor = 1024.0 * rowsFlop / fl.flops * 1e3;
    double sortFloor = 16.0 * visPairs / fl.bw * 1e3;
    double sortRectFloor = 16.0 * double(rowsAll) * MB / fl.bw * 1e3;
    double tot = median(total);
    char kase[64];
    std::snprintf(kase, sizeof kase, "prefill B=%d S=%d", B, S);
    std::printf("\n### prefill %s B=%d S=%d (MB=%d, Rc=%lld, %lld chunks, workspace %.1f MiB)\n", dtName, B, S, MB,
                static_cast<long long>(rc), static_cast<long long>((rowsAll + rc - 1) / rc), wsBytes / 1048576.0);
    std::printf("| what | median ms | before ms | floor ms | ratio |\n|---|---|---|---|---|\n");
    std::printf("| runQsaIndexerPrefill (total, %d runs) | %.3f | %s | %.3f | %.2f |\n", runs, tot,
                before(dtName, kase, "total").c_str(), k2Floor + sortFloor, tot / (k2Floor + sortFloor));
    for (auto const& kv : stage) {
        double m = median(kv.second);
        std::string const name = kv.first;
        if (name.compare(0, 9, "K2 scores") == 0) {
            std::printf("| %s | %.3f | %s | %.3f | %.2f |\n", name.c_str(), m, before(dtName, kase, name).c_str(),
                        k2Floor, m / k2Floor);
        } else if (name == "sort (whole rows)") {
            std::printf("| %s | %.3f | - | %.3f (visible) / %.3f (rectangle) | %.2f / %.2f |\n", name.c_str(), m,
                        sortFloor, sortRectFloor, m / sortFloor, m / sortRectFloor);
        } else if (name == kRunnerRow || name == kCtaRow) {
            std::printf("| %s | %.3f | %s | %.3f (visible) | %.2f |\n", name.c_str(), m,
                        before(dtName, kase, name == kRunnerRow ? "fused" : name).c_str(), sortFloor, m / sortFloor);
        } else {
            std::printf("| %s | %.3f | %s | - | - |\n", name.c_str(), m, before(dtName, kase, name).c_str());
        }
    }
    {
        // The runner's warp-per-row kernel must give the CTA kernel's bits on every row (both wrote all rows,
        // chunk by chunk, from the same logits).
        std::vector<int32_t> a(size_t(rowsAll) * 2051), b(a.size());
        QSA_CUDA(cudaStreamSynchronize(st));
        QSA_CUDA(cudaMemcpy(a.data(), out, a.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
        QSA_CUDA(cudaMemcpy(b.data(), outCta, b.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
        size_t i = 0;
        while (i < a.size() && a[i] == b[i])
            ++i;
        if (i == a.size()) {
            std::printf("runner selection (MB=%d, %s): outIdx identical to the CTA-per-row kernel's on all %lld rows\n",
                        MB, MB > 2048 ? "the CTA kernel itself" : "one warp per row", static_cast<long long>(rowsAll));
        } else {
            std::printf("runner selection (MB=%d): outIdx DIFFERS from the CTA-per-row kernel's: row %lld column %lld: "
                        "%d, CTA kernel %d\n",
                        MB, static_cast<long long>(i / 2051), static_cast<long long>(i % 2051), a[i], b[i]);
        }
    }
    std::printf("K2: %.3g FLOP (%.2f TFLOP/s achieved by the K2 launcher); sorted pairs: %.4g visible, %.4g rect\n",
                1024.0 * rowsFlop, 1024.0 * rowsFlop / (median(stage["K2 scores"]) * 1e-3) / 1e12, visPairs,
                double(rowsAll) * MB);
}

template <typename T>
void benchDecode(char const* dtName, bool isBf16, int32_t B, int32_t ctxLen, int runs, Floors const& fl) {
    DeviceMemory mem;
    int32_t const maxBlocks = ctxLen / 4;
    int32_t const pagesPerSeq = (ctxLen + 127) / 128;
    int32_t const numPages = B * pagesPerSeq, kvHeads = 2, poolHeadDim = 384, headSize = 256;
    qsa::testlib::Stream stream;
    cudaStream_t const st = stream.get();
    size_t poolElems = size_t(2) * numPages * 128 * kvHeads * poolHeadDim;
    auto* pool = mem.alloc<uint16_t>(poolElems);
    qsa::bench::fillRandomT(pool, poolElems, 3, isBf16, st);
    std::vector<int32_t> pt(size_t(B) * 2 * pagesPerSeq);
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t s = 0; s < pagesPerSeq; ++s) {
            pt[(size_t(b) * 2 + 0) * pagesPerSeq + s] = b * pagesPerSeq + s;
            pt[(size_t(b) * 2 + 1) * pagesPerSeq + s] = numPages + b * pagesPerSeq + s;
        }
    }
    auto* dpt = mem.upload(pt);
    kn::QsaIndexerPoolState ps{pool, dpt, pagesPerSeq, numPages, kvHeads, poolHeadDim, headSize};
    RunnerInputs<T> const in(mem, B, B, ctxLen, ctxLen, 4, isBf16, st);
    int32_t* out = in.out;
    int32_t const* ctx = in.ctx;
    float const* cs = in.cs;
    T const *tq = in.tq(), *tw = in.tw(), *twK = in.twK();
    auto* split = mem.alloc<int32_t>(size_t(B) * kvHeads);
    size_t wsBytes = kn::getQsaIndexerDecodeWorkspaceSize(B, maxBlocks);
    auto* ws = mem.alloc<char>(wsBytes);
    auto runOnce = [&](cudaStream_t s) {
        kn::runQsaIndexerDecode<T>(out, tq, cs, ctx, tw, twK, 1e-6f, ps, split, ws, wsBytes, B, maxBlocks, s);
    };
    for (int i = 0; i < 5; ++i)
        runOnce(st);
    std::vector<double> const plain = timeRuns(runs, st, [&] { runOnce(st); });
    std::vector<double> const graphT = timeGraph(runs, st, runOnce);
    auto* qn = mem.alloc<uint16_t>(size_t(B) * 512);
    auto* logits = mem.alloc<float>(size_t(B) * maxBlocks);
    // The runner before issue 35, in the same run: B1, B2, B3 as three launches (B2 and B3 by programmatic
    // dependent launch), captured in a graph like the runner. Its outIdx must equal the runner's.
    auto threeLaunches = [&](cudaStream_t s) {
        kn::launchQsaDecodePrep<T>(reinterpret_cast<T*>(qn), tq, cs, ctx, tw, twK, 1e-6f, ps, B, maxBlocks, s);
        kn::launchQsaDecodeScores<T>(logits, reinterpret_cast<T const*>(qn), ctx, ps, B, maxBlocks, s);
        kn::qsa_detail::launchDecodeSelectImpl("bench", out, logits, ctx, split, kvHeads, B, maxBlocks, s);
    };
    // Both from the same pool state: the step's pool writes are the same bits each time (B1 rewrites the same
    // cells from the same inputs), so repeated steps read the same pool.
    auto outIdxAfter = [&](auto step) {
        std::vector<int32_t> host(size_t(B) * 2051);
        step(st);
        QSA_CUDA(cudaMemcpyAsync(host.data(), out, host.size() * 4, cudaMemcpyDeviceToHost, st));
        QSA_CUDA(cudaStreamSynchronize(st));
        return host;
    };
    std::printf("\ndecode B=%d: outIdx of the runner %s the three launches' on all %d rows\n", B,
                outIdxAfter(runOnce) == outIdxAfter(threeLaunches) ? "IDENTICAL to" : "DIFFERS from", B);
    std::vector<double> const graph3 = timeGraph(runs, st, threeLaunches);
    // Stages on their own.
    std::map<std::string, std::vector<double>> stage;
    for (int r = -3; r < runs; ++r) {
        Laps l(st);
        l.mark("start");
        kn::launchQsaDecodePrep<T>(reinterpret_cast<T*>(qn), tq, cs, ctx, tw, twK, 1e-6f, ps, B, maxBlocks, st);
        l.mark("B1 decodePrep");
        kn::launchQsaDecodeScores<T>(logits, reinterpret_cast<T const*>(qn), ctx, ps, B, maxBlocks, st);
        l.mark("B2 decodeScores");
        kn::launchQsaZeroSplitCounters(split, B, kvHeads, st);
        l.mark("zeroSplitCounters (public; the runner folds it into B3)");
        kn::launchQsaDecodeSelect(out, logits, ctx, B, maxBlocks, st);
        l.mark("B3 decodeSelect");
        kn::qsa_detail::launchDecodePrepScoresImpl<T>("bench", reinterpret_cast<T*>(qn), logits, tq, cs, ctx, tw, twK,
                                                      1e-6f, ps, B, maxBlocks, st);
        l.mark("B1+B2 as one launch (the runner's)");
        auto m = l.sums();
        if (r >= 0) {
            for (auto const& kv : m)
                stage[kv.first].push_back(kv.second);
        }
    }
    double floorMs = double(B) * (ctxLen / 4) * 256.0 / fl.bw * 1e3;
    char kase[64];
    std::snprintf(kase, sizeof kase, "decode B=%d", B);
    std::printf("\n### decode %s B=%d ctx=%d (maxBlocks=%d, pool %.1f GiB)\n", dtName, B, ctxLen, maxBlocks,
                poolElems * 2.0 / (1u << 30));
    std::printf("| what | median ms | before ms | floor ms | ratio |\n|---|---|---|---|---|\n");
    std::printf("| runQsaIndexerDecode, stream (%d runs) | %.4f | %s | %.4f | %.2f |\n", runs, median(plain),
                before(dtName, kase, "stream").c_str(), floorMs, median(plain) / floorMs);
    std::printf("| runQsaIndexerDecode, CUDA graph (%d runs) | %.4f | %s | %.4f | %.2f |\n", runs, median(graphT),
                before(dtName, kase, "graph").c_str(), floorMs, median(graphT) / floorMs);
    std::printf("| three launches B1, B2, B3 (the runner before issue 35), CUDA graph | %.4f | - | %.4f | %.2f |\n",
                median(graph3), floorMs, median(graph3) / floorMs);
    for (auto const& kv : stage) {
        double m = median(kv.second);
        if (kv.first == "B2 decodeScores" || kv.first == "B1+B2 as one launch (the runner's)") {
            std::printf("| %s | %.4f | %s | %.4f | %.2f |\n", kv.first.c_str(), m,
                        before(dtName, kase, kv.first).c_str(), floorMs, m / floorMs);
        } else {
            std::printf("| %s | %.4f | %s | - | - |\n", kv.first.c_str(), m, before(dtName, kase, kv.first).c_str());
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    int runs = 20;
    std::string dt = "half";
    std::string only; // "prefill" or "decode": that half of the cases (e.g. under a profiler)
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--runs") == 0)
            runs = std::max(20, std::atoi(argv[i + 1]));
        if (std::strcmp(argv[i], "--dtype") == 0)
            dt = argv[i + 1];
        if (std::strcmp(argv[i], "--only") == 0)
            only = argv[i + 1];
    }
    try {
        cudaDeviceProp prop{};
        QSA_CUDA(cudaGetDeviceProperties(&prop, 0));
        Floors fl = measureFloors();
        std::printf("# QSA indexer bench on %s (%d SMs), %s, median of %d runs after warm-up\n", prop.name,
                    prop.multiProcessorCount, dt.c_str(), runs);
        std::printf("measured: FP32 FMA %.2f TFLOP/s; copy %.1f GB/s (kernel %.1f, cudaMemcpy D2D %.1f; read+write)\n",
                    fl.flops / 1e12, fl.bw / 1e9, fl.bwKernel / 1e9, fl.bwMemcpy / 1e9);
        bool bf = dt == "bf16";
        auto prefill = [&](int32_t B, int32_t S) {
            bf ? benchPrefill<__nv_bfloat16>("bf16", true, B, S, runs, fl)
               : benchPrefill<half>("half", false, B, S, runs, fl);
        };
        auto decode = [&](int32_t B, int32_t c) {
            bf ? benchDecode<__nv_bfloat16>("bf16", true, B, c, runs, fl)
               : benchDecode<half>("half", false, B, c, runs, fl);
        };
        if (only != "decode") {
            prefill(1, 32768);
            prefill(8, 4096);
            prefill(1, 8192);
        }
        if (only != "prefill") {
            decode(64, 131072);
            decode(1, 131072);
        }
    } catch (std::exception const& e) {
        std::fprintf(stderr, "bench failed: %s\n", e.what());
        return 1;
    }
    return 0;
}

// Benchmark of the reference (not a test): K2 GFLOP/s (1024 FLOP per visible (row, block): 4 heads x 128
// fma x 2) through the scores stage, and pipeline rows/s: the full prefill for S = 4096 and 16384, the
// row-subset entry point on sampled rows for S = 4096, 16384 and 131072.
//   bazel run -c opt //reference:bench -- [numThreads]
#include "reference/k2.h"
#include "reference/numerics.h"
#include "reference/qsaReference.h"
#include "reference/stages.h"
#include "testing/inputs.h"
#include "testing/rng.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

using namespace qsa::ref;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Process CPU seconds (all threads). On a shared machine the wall-clock figures depend on the other load;
// the CPU time shows what this process actually got.
double cpuNow() {
    return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

PrefillCase makeCase(int32_t S) {
    PrefillCase c;
    c.dtype = DType::kBf16;
    c.batchSize = 1;
    c.seqLen = S;
    c.contextLengths = {S};
    c.keepLogits = false;
    c.indexQk.resize(static_cast<size_t>(S) * kQkWidth);
    qsa::testlib::Rng rng(2463534242u);
    for (auto& v : c.indexQk) {
        v = floatToBf16(rng.uniform(-1.0f, 1.0f));
    }
    c.cosSin = qsa::testlib::ropeTable(10000.0, S);
    c.wQ.assign(128, floatToBf16(0.05f));
    c.wK.assign(128, floatToBf16(-0.05f));
    return c;
}

} // namespace

int main(int argc, char** argv) {
    int const threads = argc > 1 ? std::atoi(argv[1]) : 0;
    std::printf("K2 variant: %s, threads: %d (hardware %u)\n", k2Variant(), threads,
                std::thread::hardware_concurrency());
    for (int32_t S : {4096, 16384, 131072}) {
        PrefillCase const c = makeCase(S);
        int32_t const mb = (S + 3) / 4;
        // K2 alone: the scores stage over the last R rows (T-rounded inputs from a real qPrep / kCompress).
        int32_t const R = S >= 131072 ? 256 : 1024;
        std::vector<uint16_t> qn(static_cast<size_t>(S) * 512);
        std::vector<uint16_t> kbar(static_cast<size_t>(mb) * 128);
        qPrep(c.dtype, qn.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wQ.data(), c.rmsEps, 1,
              S);
        kCompress(c.dtype, kbar.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wK.data(),
                  c.rmsEps, 1, S, mb, 0, mb, 0);
        std::vector<float> logits(static_cast<size_t>(R) * mb);
        double pairs = 0; // visible (row, block) pairs of those rows
        for (int64_t t = S - R; t < S; ++t) {
            pairs += static_cast<double>((t + 1) / 4);
        }
        double t0 = now();
        double c0 = cpuNow();
        scores(c.dtype, logits.data(), qn.data(), kbar.data(), c.contextLengths.data(), 1, S, S - R, S, threads);
        double const k2s = now() - t0;
        double const k2c = cpuNow() - c0;
        double const gflop = pairs * 1024.0 / 1e9;
        std::printf("S=%6d  K2 over %d rows: %.3f s wall = %.1f GFLOP/s; %.3f CPU-s = %.1f GFLOP per CPU-s\n", S, R,
                    k2s, gflop / k2s, k2c, gflop / k2c);
        // Full prefill (all rows) where it is affordable.
        if (S <= 16384) {
            t0 = now();
            c0 = cpuNow();
            PrefillResult const r = runPrefill(c, threads);
            double const ps = now() - t0;
            std::printf("S=%6d  runPrefill, all %d rows: %.2f s wall = %.0f rows/s; %.2f CPU-s\n", S, S, ps, S / ps,
                        cpuNow() - c0);
        }
        // Sampled rows through the row-subset entry point (q of those rows, kbar of the blocks they see).
        std::vector<int64_t> sample;
        int64_t const n = 256;
        for (int64_t i = 0; i < n; ++i) {
            sample.push_back(S - 1 - i * (S / n));
        }
        t0 = now();
        c0 = cpuNow();
        std::vector<int32_t> const out = runPrefillRows(c, sample, threads);
        double const rs = now() - t0;
        std::printf("S=%6d  runPrefillRows, %lld sampled rows: %.2f s wall = %.0f rows/s; %.2f CPU-s\n", S,
                    static_cast<long long>(n), rs, n / rs, cpuNow() - c0);
    }
    return 0;
}

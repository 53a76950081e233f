// The runner's fused prefill selection (prefill_select.cu: the CTA-per-row kernel in every variant
// launchPrefillSelectExpand picks by MB, and the warp-per-row candidate for MB <= 2048, the CTA kernel above)
// against the reference's selection + K4 (reference/rowops.h: selectPrefillRow, expandRow, fillRow), bit for
// bit, on tie-heavy windows of rows. Two targets build this file:
// - //kernels:prefill_select_simt_test (QSA_SIMT, CPU, CI): the kernel source runs through testing/simt.h, which
//   checks its LOGIC (radix passes, threshold ties, the sort's order, K4's tail, padded rows, row windows,
//   divergent collectives); simt_launch.pl only rewrites its launches;
// - //kernels:prefill_select_gpu_test (gpu, manual): the same windows on the device (memory model, the real
//   compiler), both kernels. manual while the warp kernel is a candidate the runner does not call (it is in
//   the GPU bundle: run_all.sh runs it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/qsaInternal.h"
#include "reference/rowops.h"
#include "testing/rng.h"
#if !defined(QSA_SIMT)
#include "testing/device_buffer.h"
#endif

namespace kn = trt_edgellm::kernel::qsa_detail;
using qsa::testlib::Rng;

namespace qsa {
namespace {

constexpr int kWidth = 2051;

// Visible logits as K2 leaves them: >= +0.0, never NaN or -0.0 (relu sums), with ties the common case.
enum class Mode { Zeros, FewValues, ThresholdTies, Random, ZerosAndTiny };
char const* modeName(Mode m) {
    static char const* const kNames[] = {"zeros", "few_values", "threshold_ties", "random", "zeros_and_tiny"};
    return kNames[static_cast<int>(m)];
}

float drawLogit(Mode m, Rng& rng, int g) {
    switch (m) {
    case Mode::Zeros:
        return 0.0f;
    case Mode::FewValues: // modulo mode: 3 distinct values, equal keys everywhere
        return static_cast<float>(rng.below(3)) * 0.5f;
    case Mode::ThresholdTies: // a long run of one value, a few above it, a few below: ties straddle rank 512
        return rng.below(16) == 0 ? 2.0f + static_cast<float>(rng.below(4)) : (rng.below(8) == 0 ? 0.0f : 1.0f);
    case Mode::Random:
        return rng.uniform(0.0f, 8.0f);
    default: // +0.0 beside the smallest subnormals and a few values differing in their last bit
        return rng.coin() ? 0.0f : (rng.coin() ? 1.4e-45f : std::nextafter(1.0f, 2.0f) * static_cast<float>(g % 2 + 1));
    }
}

#if defined(QSA_SIMT)
// testing/simt.h runs the kernels on host memory.
void launchSelect(kn::PrefillSelectKernel kernel, std::vector<int32_t>& out, std::vector<float> const& logits,
                  std::vector<int32_t> const& ctx, int S, int64_t rowBegin, int64_t rowEnd) {
    kn::launchPrefillSelectExpand(out.data(), logits.data(), ctx.data(), S, rowBegin, rowEnd, nullptr, kernel);
}
#else
void launchSelect(kn::PrefillSelectKernel kernel, std::vector<int32_t>& out, std::vector<float> const& logits,
                  std::vector<int32_t> const& ctx, int S, int64_t rowBegin, int64_t rowEnd) {
    testlib::DeviceBuffer<int32_t> dOut(out), dCtx(ctx);
    testlib::DeviceBuffer<float> dLogits(logits);
    testlib::Stream stream;
    kn::launchPrefillSelectExpand(dOut.get(), dLogits.get(), dCtx.get(), S, rowBegin, rowEnd, stream.get(), kernel);
    stream.sync();
    out = dOut.download();
}
#endif

char const* kernelName(kn::PrefillSelectKernel k) {
    return k == kn::PrefillSelectKernel::CtaPerRow ? "CtaPerRow" : "WarpPerRow";
}

using Counts = std::map<std::string, int>;

// One launch over rows [rowBegin, rowEnd) of a B x S call; every row checked.
void runWindow(kn::PrefillSelectKernel kernel, int B, int S, std::vector<int32_t> const& ctx, int64_t rowBegin,
               int64_t rowEnd, Mode mode, uint64_t seed, Counts& cov) {
    int32_t const MB = (S + 3) / 4;
    int64_t const rows = rowEnd - rowBegin;
    Rng rng(seed);
    std::vector<float> logits(static_cast<size_t>(rows) * MB);
    for (int64_t i = 0; i < rows; ++i) {
        int64_t const r = rowBegin + i;
        int const t = static_cast<int>(r % S);
        int const nVis = (t + 1) / 4;
        for (int g = 0; g < MB; ++g) {
            // Past nVis: what K2's public form writes there is irrelevant; NaN shows a read of it.
            logits[static_cast<size_t>(i) * MB + g] = g < nVis ? drawLogit(mode, rng, g) : std::nanf("");
        }
    }
    // Every row of the call, so that a write outside the window shows; kept across windows (a fresh 100 MB
    // buffer per window cost more page faults than the emulation).
    static std::vector<int32_t> out;
    out.resize(static_cast<size_t>(B) * S * kWidth);
    std::fill(out.begin(), out.end(), 0x5A5A5A5A);
    launchSelect(kernel, out, logits, ctx, S, rowBegin, rowEnd);

    std::vector<int32_t> expect(kWidth), sel(512);
    for (int64_t r = 0; r < static_cast<int64_t>(B) * S; ++r) {
        int32_t const* got = &out[static_cast<size_t>(r) * kWidth];
        bool const inWindow = r >= rowBegin && r < rowEnd;
        int const b = static_cast<int>(r / S), t = static_cast<int>(r % S);
        int const c = ref::clampCtx(ctx[b], S);
        int const nVis = t < c ? (t + 1) / 4 : 0;
        if (!inWindow) {
            std::fill(expect.begin(), expect.end(), 0x5A5A5A5A);
        } else if (t >= c) {
            ref::fillRow(expect.data());
            ++cov["padded"];
        } else {
            float const* row = &logits[static_cast<size_t>(r - rowBegin) * MB];
            int32_t const kSel = ref::selectPrefillRow(row, nVis, sel.data());
            ref::expandRow(expect.data(), sel.data(), kSel, nVis, (t + 1) % 4);
            if (nVis > 512) {
                ++cov["nvis_gt_512"];
                std::vector<float> v(row, row + nVis);
                std::nth_element(v.begin(), v.begin() + 511, v.end(), std::greater<float>());
                float const thr = v[511];
                int above = 0, at = 0;
                for (float x : v) {
                    above += x > thr;
                    at += x == thr;
                }
                if (above + at > 512) {
                    ++cov["ties_at_threshold"];
                }
            } else if (nVis > 0) {
                ++cov["nvis_1_512"];
            } else {
                ++cov["nvis_0"];
            }
        }
        if (std::memcmp(got, expect.data(), sizeof(int32_t) * kWidth) != 0) {
            int p = 0;
            while (got[p] == expect[p]) {
                ++p;
            }
            ADD_FAILURE() << kernelName(kernel) << " kernel, row " << r << " (b=" << b << " t=" << t
                          << " ctx=" << ctx[b] << " nVis=" << nVis << ") of B=" << B << " S=" << S << " rows=["
                          << rowBegin << "," << rowEnd << ") mode=" << modeName(mode) << " seed=" << seed << ": outIdx["
                          << p << "] got " << got[p] << ", reference " << expect[p];
            return;
        }
    }
    // The kernel (and template) launchPrefillSelectExpand runs for this MB.
    bool const warp = kernel == kn::PrefillSelectKernel::WarpPerRow && MB <= 2048;
    ++cov[std::string(warp ? "warp_kernel_mb_" : "cta_kernel_mb_") + (MB <= 1024   ? "le_1024"
                                                                      : MB <= 2048 ? "le_2048"
                                                                                   : "gt_2048")];
}

void printCoverage(char const* test, Counts const& cov, std::vector<std::string> const& required) {
    std::string line = std::string("QSA_COVERAGE ") + test;
    for (auto const& [k, v] : cov) {
        line += " " + k + "=" + std::to_string(v);
    }
    std::printf("%s\n", line.c_str());
    for (std::string const& k : required) {
        EXPECT_GT(cov.count(k) ? cov.at(k) : 0, 0) << "region " << k << " never reached";
    }
}

struct Window {
    int B, S;
    std::vector<int32_t> ctx;
    int64_t rowBegin, rowEnd;
    Mode mode;
};

class PrefillSelectSimt : public ::testing::TestWithParam<kn::PrefillSelectKernel> {};

// Runs the windows in order and stops at the first wrong one (it is the report; a mutant run stays short).
void runWindows(std::vector<Window> const& windows, uint64_t seed, std::vector<std::string> required) {
    kn::PrefillSelectKernel const kernel = PrefillSelectSimt::GetParam();
    for (std::string& k : required) {
        if (k == "kernel_mb_le_2048" || k == "kernel_mb_le_1024") {
            k = (kernel == kn::PrefillSelectKernel::WarpPerRow ? "warp_" : "cta_") + k;
        }
    }
    Counts cov;
    for (Window const& w : windows) {
        runWindow(kernel, w.B, w.S, w.ctx, w.rowBegin, w.rowEnd, w.mode, seed++, cov);
        if (::testing::Test::HasFailure()) {
            return;
        }
    }
    ::testing::TestInfo const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    printCoverage((std::string(info->test_suite_name()) + "." + info->name()).c_str(), cov, required);
}

constexpr Mode kModes[] = {Mode::Zeros, Mode::FewValues, Mode::ThresholdTies, Mode::Random, Mode::ZerosAndTiny};

// Rows around nVis = 512 (t = 2044 .. 2053) and the first rows, in each variant, every logit mode.
TEST_P(PrefillSelectSimt, RowsAroundKSelInEveryVariant) {
    std::vector<Window> ws;
    for (int S : {4096, 8192, 8200}) {
        for (Mode m : kModes) {
            ws.push_back({1, S, {S}, 2044, 2054, m});
            ws.push_back({1, S, {S}, 0, 9, m});
        }
    }
    runWindows(ws, 1,
               {"nvis_0", "nvis_1_512", "nvis_gt_512", "ties_at_threshold", "kernel_mb_le_1024", "kernel_mb_le_2048",
                "cta_kernel_mb_gt_2048"});
}

// Long rows (nVis up to MB) with ties, a batch with padding (ctx < S, ctx 0 and ctx > S clamped), windows that
// start and end inside a sequence.
TEST_P(PrefillSelectSimt, LongRowsPaddingAndWindows) {
    std::vector<Window> ws;
    for (int S : {4096, 8192, 8200}) {
        std::vector<int32_t> const ctx = {S - 5, 0, S + 7};
        for (Mode m : {Mode::ThresholdTies, Mode::Random, Mode::Zeros}) {
            ws.push_back({3, S, ctx, S - 12, S + 3, m});        // b=0's last rows (padded from t = S - 5)
            ws.push_back({3, S, ctx, 3 * S - 4, 3 * S, m});     // b=2's last rows, nVis = MB
            ws.push_back({3, S, ctx, 2 * S - 2, 2 * S + 2, m}); // b=1 (ctx 0: all padded) into b=2
        }
    }
    runWindows(ws, 100,
               {"padded", "nvis_gt_512", "ties_at_threshold", "nvis_0", "kernel_mb_le_1024", "kernel_mb_le_2048"});
}

// Random calls: S at the MB boundaries that switch kernels (1024 | 1025, 2048 | 2049 blocks) and anywhere up to
// 8300, B up to 3, ctx anywhere in [-2, S + 5] (clamped), windows of up to 40 rows, half of them in the last
// rows of a sequence (nVis > 512), every logit mode.
TEST_P(PrefillSelectSimt, RandomWindows) {
    Rng rng(7);
    int const boundaryS[] = {4093, 4096, 4097, 4100, 8189, 8192, 8193, 8196, 2052, 2047, 1, 3, 4};
    constexpr int kModeCount = sizeof(kModes) / sizeof(kModes[0]);
    std::vector<Window> ws;
    for (int i = 0; i < 160; ++i) {
        int const S =
            rng.coin() ? boundaryS[rng.below(sizeof(boundaryS) / sizeof(int))] : static_cast<int>(rng.between(1, 8300));
        int const B = static_cast<int>(rng.between(1, 3));
        std::vector<int32_t> ctx(B);
        for (int32_t& c : ctx) {
            c = static_cast<int32_t>(rng.coin() ? S - rng.below(4) : rng.between(-2, S + 5));
        }
        int64_t const rows = static_cast<int64_t>(B) * S;
        int64_t const len = std::min<int64_t>(rows, rng.between(1, 40));
        int64_t const b = rng.below(B);
        int64_t begin = rng.coin() ? (b + 1) * S - len : rng.below(rows - len + 1); // a sequence's last rows
        begin = std::max<int64_t>(0, std::min(begin, rows - len));
        ws.push_back({B, S, ctx, begin, begin + len, kModes[rng.below(kModeCount)]});
    }
    runWindows(ws, 1000,
               {"padded", "nvis_0", "nvis_1_512", "nvis_gt_512", "ties_at_threshold", "kernel_mb_le_1024",
                "kernel_mb_le_2048", "cta_kernel_mb_gt_2048"});
}

INSTANTIATE_TEST_SUITE_P(Kernels, PrefillSelectSimt,
                         ::testing::Values(kn::PrefillSelectKernel::CtaPerRow, kn::PrefillSelectKernel::WarpPerRow),
                         [](::testing::TestParamInfo<kn::PrefillSelectKernel> const& i) {
                             return kernelName(i.param);
                         });

} // namespace
} // namespace qsa

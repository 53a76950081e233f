// The runner's fused prefill selection (prefill_select.cu, every variant launchPrefillSelectExpand picks by MB)
// run on the CPU through testing/simt.h and compared bit for bit with the reference's selection + K4
// (reference/rowops.h: selectPrefillRow, expandRow, fillRow). No GPU: this runs in CI and checks the kernel's
// LOGIC (radix passes, threshold ties, the sort's order, K4's tail, padded rows, row windows), the part a
// kernel rewrite most often breaks; the GPU suite checks the same source on the hardware (memory model,
// timing, the real compiler). The kernel source is unchanged: simt_launch.pl only rewrites its launches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
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

namespace kn = trt_edgellm::kernel::qsa_detail;
using qsa::testlib::Rng;

namespace qsa {
namespace {

constexpr int kWidth = 2051;

// Visible logits as K2 leaves them: >= +0.0, never NaN or -0.0 (relu sums), with ties the common case.
enum class Mode { Zeros, FewValues, ThresholdTies, Random, ZerosAndTiny };
char const* modeName(Mode m) {
    switch (m) {
    case Mode::Zeros:
        return "zeros";
    case Mode::FewValues:
        return "few_values";
    case Mode::ThresholdTies:
        return "threshold_ties";
    case Mode::Random:
        return "random";
    default:
        return "zeros_and_tiny";
    }
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

struct Counts {
    std::map<std::string, int> n;
};

// One launch over rows [rowBegin, rowEnd) of a B x S call; every row checked.
void runWindow(int B, int S, std::vector<int32_t> const& ctx, int64_t rowBegin, int64_t rowEnd, Mode mode,
               uint64_t seed, Counts& cov) {
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
    std::vector<int32_t> out(static_cast<size_t>(B) * S * kWidth, 0x5A5A5A5A);
    kn::launchPrefillSelectExpand(out.data(), logits.data(), ctx.data(), S, rowBegin, rowEnd, nullptr);

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
            ++cov.n["padded"];
        } else {
            float const* row = &logits[static_cast<size_t>(r - rowBegin) * MB];
            int32_t const kSel = ref::selectPrefillRow(row, nVis, sel.data());
            ref::expandRow(expect.data(), sel.data(), kSel, nVis, (t + 1) % 4);
            if (nVis > 512) {
                ++cov.n["nvis_gt_512"];
                std::vector<float> v(row, row + nVis);
                std::nth_element(v.begin(), v.begin() + 511, v.end(), std::greater<float>());
                float const thr = v[511];
                int above = 0, at = 0;
                for (float x : v) {
                    above += x > thr;
                    at += x == thr;
                }
                if (above + at > 512) {
                    ++cov.n["ties_at_threshold"];
                }
            } else if (nVis > 0) {
                ++cov.n["nvis_1_512"];
            } else {
                ++cov.n["nvis_0"];
            }
        }
        if (std::memcmp(got, expect.data(), sizeof(int32_t) * kWidth) != 0) {
            int p = 0;
            while (got[p] == expect[p]) {
                ++p;
            }
            ADD_FAILURE() << "row " << r << " (b=" << b << " t=" << t << " ctx=" << ctx[b] << " nVis=" << nVis
                          << ") of B=" << B << " S=" << S << " rows=[" << rowBegin << "," << rowEnd
                          << ") mode=" << modeName(mode) << " seed=" << seed << ": outIdx[" << p << "] got " << got[p]
                          << ", reference " << expect[p];
            return;
        }
    }
    ++cov.n[std::string("variant_mb_") + (MB <= 1024 ? "le_1024" : MB <= 2048 ? "le_2048" : "gt_2048")];
}

void printCoverage(char const* test, Counts const& cov, std::vector<std::string> const& required) {
    std::string line = std::string("QSA_COVERAGE ") + test;
    for (auto const& [k, v] : cov.n) {
        line += " " + k + "=" + std::to_string(v);
    }
    std::printf("%s\n", line.c_str());
    for (std::string const& k : required) {
        EXPECT_GT(cov.n.count(k) ? cov.n.at(k) : 0, 0) << "region " << k << " never reached";
    }
}

struct Window {
    int B, S;
    std::vector<int32_t> ctx;
    int64_t rowBegin, rowEnd;
    Mode mode;
};

// Runs the windows in order and stops at the first wrong one (it is the report; a mutant run stays short).
void runWindows(char const* test, std::vector<Window> const& windows, uint64_t seed,
                std::vector<std::string> const& required) {
    Counts cov;
    for (Window const& w : windows) {
        runWindow(w.B, w.S, w.ctx, w.rowBegin, w.rowEnd, w.mode, seed++, cov);
        if (::testing::Test::HasFailure()) {
            return;
        }
    }
    printCoverage(test, cov, required);
}

constexpr Mode kModes[] = {Mode::Zeros, Mode::FewValues, Mode::ThresholdTies, Mode::Random, Mode::ZerosAndTiny};

// Rows around nVis = 512 (t = 2044 .. 2053) and the first rows, in each variant, every logit mode.
TEST(PrefillSelectSimt, RowsAroundKSelInEveryVariant) {
    std::vector<Window> ws;
    for (int S : {4096, 8192, 8200}) {
        for (Mode m : kModes) {
            ws.push_back({1, S, {S}, 2044, 2054, m});
            ws.push_back({1, S, {S}, 0, 9, m});
        }
    }
    runWindows("PrefillSelectSimt.RowsAroundKSelInEveryVariant", ws, 1,
               {"nvis_0", "nvis_1_512", "nvis_gt_512", "ties_at_threshold", "variant_mb_le_1024", "variant_mb_le_2048",
                "variant_mb_gt_2048"});
}

// Long rows (nVis up to MB) with ties, a batch with padding (ctx < S, ctx 0 and ctx > S clamped), windows that
// start and end inside a sequence.
TEST(PrefillSelectSimt, LongRowsPaddingAndWindows) {
    std::vector<Window> ws;
    for (int S : {4096, 8192, 8200}) {
        std::vector<int32_t> const ctx = {S - 5, 0, S + 7};
        for (Mode m : {Mode::ThresholdTies, Mode::Random, Mode::Zeros}) {
            ws.push_back({3, S, ctx, S - 12, S + 3, m});        // b=0's last rows (padded from t = S - 5)
            ws.push_back({3, S, ctx, 3 * S - 4, 3 * S, m});     // b=2's last rows, nVis = MB
            ws.push_back({3, S, ctx, 2 * S - 2, 2 * S + 2, m}); // b=1 (ctx 0: all padded) into b=2
        }
    }
    runWindows("PrefillSelectSimt.LongRowsPaddingAndWindows", ws, 100,
               {"padded", "nvis_gt_512", "ties_at_threshold", "nvis_0"});
}

} // namespace
} // namespace qsa

// The coverage floors of coverage.h: construction floors are counts, drawn floors are binomial quantiles
// (false alarm < kDrawnAlpha at the claimed rate), and both fail a run that misses them.
#include "properties/coverage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace qsa {
namespace prop {
namespace coverage {
namespace {

// P(Bin(n, p) <= h), summed directly in long double (an independent check of drawnNeeded's log-space sum).
long double binomialCdf(int n, int h, long double p) {
    long double term = std::pow(1.0L - p, n); // P(X = 0)
    long double sum = 0.0L;
    for (int k = 0; k <= h; ++k) {
        sum += term;
        term *= (long double)(n - k) / (k + 1) * p / (1.0L - p);
    }
    return sum;
}

struct Judged {
    std::string violations;
    std::string line;
};

// A run of `cases` passed cases, region "r" hit in the first `hits` of them.
Judged runOf(int cases, int hits, double floor, bool drawn, int defaultCases) {
    coverage::Run run("Coverage.Unit", defaultCases);
    for (int i = 0; i < cases; ++i) {
        run.beginCase();
        if (drawn)
            coverDrawn("r", i < hits, floor);
        else
            cover("r", i < hits, floor);
        run.passed();
    }
    return {run.violations(), run.line()};
}

TEST(Coverage, DrawnNeededIsTheAlphaQuantileOfTheBinomial) {
    int checked = 0;
    for (int n : {30, 40, 60, 80, 300, 400, 600}) {
        for (double rate : {0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.9}) {
            int64_t const h = drawnNeeded(rate, n);
            // h passes: P(X <= h) >= alpha; h - 1 fails: P(X <= h - 1) < alpha.
            EXPECT_GE(binomialCdf(n, int(h), rate), (long double)kDrawnAlpha) << "n=" << n << " rate=" << rate;
            if (h > 0) {
                EXPECT_LT(binomialCdf(n, int(h) - 1, rate), (long double)kDrawnAlpha) << "n=" << n << " rate=" << rate;
                ++checked;
            }
        }
    }
    EXPECT_GE(checked, 20); // the quantile is above 0 in most of the grid: both sides were checked
    EXPECT_EQ(drawnNeeded(0.0, 40), 0);
    EXPECT_EQ(drawnNeeded(1.0, 40), 40);
    EXPECT_EQ(drawnNeeded(0.3, 400), 78); // mean 120, sd 9.2: 78 is 4.6 sd below
}

TEST(Coverage, ConstructionFloorIsACount) {
    EXPECT_EQ(runOf(40, 10, 0.25, false, 40).violations, "");
    std::string const v = runOf(40, 9, 0.25, false, 40).violations;
    EXPECT_NE(v.find("coverage of region r is 9/40, below its floor of 25% (10 cases)"), std::string::npos) << v;
    EXPECT_NE(runOf(40, 9, 0.25, false, 40).line.find("floors=r:25% check=FAIL"), std::string::npos);
}

TEST(Coverage, DrawnFloorFailsOnlyBelowItsQuantile) {
    int const need = int(drawnNeeded(0.3, 400));
    EXPECT_EQ(runOf(400, need, 0.3, true, 400).violations, "");
    std::string const v = runOf(400, need - 1, 0.3, true, 400).violations;
    EXPECT_NE(v.find("below its floor of ~30% (drawn: " + std::to_string(need) + " cases"), std::string::npos) << v;
    EXPECT_NE(runOf(400, 0, 0.3, true, 400).line.find("floors=r:~30% check=FAIL"), std::string::npos);
    // A generator that stopped reaching a region at the default budget: 0 of 40 at a claimed rate of 0.5.
    EXPECT_NE(runOf(40, 0, 0.5, true, 40).violations, "");
}

TEST(Coverage, ShortRunsReportWithoutJudging) {
    Judged const r = runOf(20, 0, 0.5, true, 40);
    EXPECT_EQ(r.violations, "");
    EXPECT_NE(r.line.find("check=skipped(20_cases<default_40)"), std::string::npos) << r.line;
}

TEST(Coverage, OneKindOfFloorPerRegion) {
    coverage::Run run("Coverage.Unit", 1);
    run.beginCase();
    cover("r", true); // no floor: counts only, either kind may follow
    coverDrawn("r", true, 0.3);
    EXPECT_THROW(cover("r", true, 0.2), std::runtime_error);
    EXPECT_THROW(cover("R", true, 0.2), std::runtime_error);
    EXPECT_THROW(coverDrawn("s", true, 1.5), std::runtime_error);
}

} // namespace
} // namespace coverage
} // namespace prop
} // namespace qsa

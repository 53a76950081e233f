// The floor of profile fast (properties/fast.h): a fast check that judged nothing fails at the default budget,
// a run with one well-judged case among unjudgeable ones passes, and a reduced budget only reports.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>

#include "properties/fast.h"

namespace qsa {
namespace prop {
namespace fast {
namespace {

// One case that met `all` elements and judged `judged` of them over `rows` rows.
void oneCase(int64_t judged, int64_t all, int64_t rows) {
    beginCase();
    tally().judgedElements += judged;
    tally().unjudgedElements += all - judged;
    tally().judgedRows += rows;
    endCase();
}

// A new run (start()) of n such cases.
void freshRun(int n, int64_t judged, int64_t all, int64_t rows) {
    start();
    for (int i = 0; i < n; ++i)
        oneCase(judged, all, rows);
}

// What finish(id, atDefaultBudget) prints on stdout (a run that fails the floor fails the test).
std::string finishOutput(char const* id, bool atDefaultBudget) {
    testing::internal::CaptureStdout();
    finish(id, atDefaultBudget);
    return testing::internal::GetCapturedStdout();
}

TEST(FastFloor, NoWellJudgedCaseFailsAtTheDefaultBudget) {
    freshRun(6, 10, 100, 4); // a tenth each: below the fifth
    EXPECT_NONFATAL_FAILURE(finish("Plant.Vacuous", true), "QSA_FAST_FLOOR Plant.Vacuous");
}

TEST(FastFloor, RowsWithoutElementsAreNotWellJudged) {
    freshRun(1, 0, 0, 5);
    EXPECT_NONFATAL_FAILURE(finish("Plant.NoElements", true), "well_judged_cases=0/1");
}

TEST(FastFloor, ElementsWithoutRowsAreNotWellJudged) {
    freshRun(1, 50, 50, 0);
    EXPECT_NONFATAL_FAILURE(finish("Plant.NoRows", true), "QSA_FAST_FLOOR");
}

TEST(FastFloor, OneWellJudgedCaseAmongUnjudgeableOnesPasses) {
    freshRun(5, 0, 1000000, 0); // NaN / huge payloads: nothing judgeable
    oneCase(20, 100, 1);        // exactly a fifth
    std::string const out = finishOutput("Fast.Mixed", true);
    EXPECT_NE(out.find("well_judged_cases=1/6 floor=enforced"), std::string::npos) << out;
}

TEST(FastFloor, AReducedBudgetReportsWithoutFailing) {
    freshRun(1, 0, 100, 0);
    std::string const out = finishOutput("Fast.Reduced", false);
    EXPECT_NE(out.find("floor=skipped(budget)"), std::string::npos) << out;
}

TEST(FastFloor, ACheckThatJudgedNothingUnderFastIsNotAFastCheck) {
    freshRun(1, 0, 0, 0);
    EXPECT_EQ(finishOutput("Ieee.Only", true), "");
}

TEST(FastFloor, TheCountsStartAfreshForEveryTest) {
    freshRun(1, 20, 100, 1);
    finishOutput("Fast.First", true);
    freshRun(1, 1, 100, 1);
    EXPECT_NONFATAL_FAILURE(finish("Fast.Second", true), "well_judged_cases=0/1");
}

} // namespace
} // namespace fast
} // namespace prop
} // namespace qsa

// The floor of profile fast (properties/fast.h): a fast check that judged nothing fails at the default budget,
// a run with one well-judged case among unjudgeable ones passes, and a reduced budget only reports.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

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

TEST(FastFloor, NoWellJudgedCaseFailsAtTheDefaultBudget) {
    start();
    for (int i = 0; i < 6; ++i)
        oneCase(10, 100, 4); // a tenth each: below the fifth
    EXPECT_NONFATAL_FAILURE(finish("Plant.Vacuous", true), "QSA_FAST_FLOOR Plant.Vacuous");
}

TEST(FastFloor, RowsWithoutElementsAreNotWellJudged) {
    start();
    oneCase(0, 0, 5);
    EXPECT_NONFATAL_FAILURE(finish("Plant.NoElements", true), "well_judged_cases=0/1");
}

TEST(FastFloor, ElementsWithoutRowsAreNotWellJudged) {
    start();
    oneCase(50, 50, 0);
    EXPECT_NONFATAL_FAILURE(finish("Plant.NoRows", true), "QSA_FAST_FLOOR");
}

TEST(FastFloor, OneWellJudgedCaseAmongUnjudgeableOnesPasses) {
    start();
    for (int i = 0; i < 5; ++i)
        oneCase(0, 1000000, 0); // NaN / huge payloads: nothing judgeable
    oneCase(20, 100, 1);        // exactly a fifth
    testing::internal::CaptureStdout();
    finish("Fast.Mixed", true);
    std::string const out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("well_judged_cases=1/6 floor=enforced"), std::string::npos) << out;
}

TEST(FastFloor, AReducedBudgetReportsWithoutFailing) {
    start();
    oneCase(0, 100, 0);
    testing::internal::CaptureStdout();
    finish("Fast.Reduced", false);
    std::string const out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("floor=skipped(budget)"), std::string::npos) << out;
}

TEST(FastFloor, ACheckThatJudgedNothingUnderFastIsNotAFastCheck) {
    start();
    oneCase(0, 0, 0);
    testing::internal::CaptureStdout();
    finish("Ieee.Only", true);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
}

TEST(FastFloor, TheCountsStartAfreshForEveryTest) {
    start();
    oneCase(20, 100, 1);
    testing::internal::CaptureStdout();
    finish("Fast.First", true);
    testing::internal::GetCapturedStdout();
    start();
    oneCase(1, 100, 1);
    EXPECT_NONFATAL_FAILURE(finish("Fast.Second", true), "well_judged_cases=0/1");
}

} // namespace
} // namespace fast
} // namespace prop
} // namespace qsa

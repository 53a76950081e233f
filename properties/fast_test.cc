// Profile fast's machinery on the CPU.
// The K2 stage judge (fast::judgePrefillLogits, used by Stages.PrefillStagesWithinFastEnclosure on the GPU
// launchers): the reference's stage outputs (a legal fast implementation: section 4's order is one of F1's) pass it,
// and each planted K2 bug fails it with the stage, row, block and value: an invisible entry written (kernel mutant
// 16), a padded row's entry written, a visible logit one interval away, a -0.0 for +0.0.
// The floor (properties/fast.h): a fast check that judged nothing fails at the default budget, a run with one
// well-judged case among unjudgeable ones passes, and a reduced budget only reports.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "properties/fast_judges.h"
#include "properties/generators.h"
#include "properties/prop.h"
#include "reference/numerics.h"
#include "reference/stages.h"

namespace qsa {
namespace prop {
namespace fast {
namespace {

struct Staged {
    ref::PrefillCase c;
    PrefillOut got;
    std::vector<float> logits; // every row, [B * S, MB]
};

// B = 2 sequences of S = 40 tokens (ctx 37 and 22: invisible entries and padded rows), ties from relu's +0.0.
Staged staged(ref::DType dt) {
    PrefillSpec spec;
    spec.B = 2;
    spec.S = 40;
    spec.ctx = {37, 22};
    spec.act.dtype = dt;
    spec.act.ties = Ties::kNegativeDots;
    spec.act.seed = 7;
    Staged s;
    s.c = toCase(spec);
    int32_t const B = s.c.batchSize, S = s.c.seqLen, MB = (S + 3) / 4;
    PrefillStages st = referencePrefillStages(s.c);
    s.got.qNormed = std::move(st.qNormed);
    s.got.kbar = std::move(st.kbar);
    s.logits.resize(size_t(B) * S * MB);
    ref::scores(dt, s.logits.data(), s.got.qNormed.data(), s.got.kbar.data(), s.c.contextLengths.data(), B, S, 0,
                B * S);
    return s;
}

std::string judge(Staged const& s) {
    start();
    return judgePrefillLogits(s.c, s.got, s.logits, 0, int64_t(s.c.batchSize) * s.c.seqLen);
}

TEST(FastStageJudge, ReferenceStagesPassAndAreJudged) {
    for (ref::DType dt : {ref::DType::kHalf, ref::DType::kBf16}) {
        Staged const s = staged(dt);
        EXPECT_EQ(judge(s), "");
        EXPECT_GT(tally().judgedElements, 100);
        EXPECT_EQ(tally().judgedRows, 37 + 22 - 3 - 3); // valid rows with nVis > 0 (t >= 3)
    }
}

TEST(FastStageJudge, PlantedK2BugsFail) {
    Staged const s = staged(ref::DType::kHalf);
    int32_t const S = s.c.seqLen, MB = (S + 3) / 4;
    auto planted = [&](int64_t row, int32_t g, float v) {
        Staged p = s;
        p.logits[size_t(row) * MB + size_t(g)] = v;
        return judge(p);
    };
    // Row t = 10 (nVis 2): block 2 is invisible (mutant 16 writes a logit there).
    EXPECT_NE(planted(10, 2, 0.0f).find("an invisible entry must be -FLT_MAX"), std::string::npos);
    // Row (b = 1, t = 30) is padding (ctx 22).
    EXPECT_NE(planted(S + 30, 0, 1.0f).find("b=1 t=30"), std::string::npos);
    // A visible logit moved far outside its interval; a relu +0.0 written as -0.0.
    float const v = s.logits[size_t(20) * MB + 1];
    EXPECT_NE(planted(20, 1, v * 2 + 1).find("outside its interval"), std::string::npos);
    int64_t zeroAt = -1;
    for (int64_t i = 0; i < int64_t(S) * MB && zeroAt < 0; ++i)
        if (ref::floatBits(s.logits[size_t(i)]) == 0)
            zeroAt = i;
    ASSERT_GE(zeroAt, 0) << "kNegativeDots drew no +0.0 logit";
    EXPECT_NE(planted(zeroAt / MB, int32_t(zeroAt % MB), -0.0f).find("(E2)"), std::string::npos);
}

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

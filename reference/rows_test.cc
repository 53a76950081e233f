// (d) The row-subset entry point equals the full computation: on random small cases (any subset, any order,
// duplicates) against runPrefill, and on S = 2200 (nVis up to 550 > 512, radix-select sized rows) against
// the literal stage composition with its full stable sorts.
#include "reference/byStages.h"
#include "reference/qsaReference.h"
#include "reference/testgen.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

namespace qsa {
namespace ref {
namespace {

using test::ValueMode;

RC_GTEST_PROP(PrefillRows, AnySubsetEqualsFullPrefill, ()) {
    DType const dt = *rc::gen::element(DType::kHalf, DType::kBf16);
    int32_t const B = *rc::gen::inRange(1, 4);
    int32_t const S = *rc::gen::inRange(1, 60);
    std::vector<int32_t> const ctx = *rc::gen::container<std::vector<int32_t>>(B, rc::gen::inRange(-1, S + 2));
    ValueMode const mode = *rc::gen::element(ValueMode::kTies, ValueMode::kNormal, ValueMode::kSpecial);
    PrefillCase const c = test::randomPrefill(*rc::gen::arbitrary<uint32_t>(), dt, B, S, ctx, mode);
    std::vector<int64_t> const rows =
        *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(0, static_cast<int64_t>(B) * S));
    std::vector<int32_t> const got = runPrefillRows(c, rows, *rc::gen::inRange(1, 4));
    PrefillResult const full = runPrefill(c);
    RC_ASSERT(got.size() == rows.size() * kIndexWidth);
    for (size_t i = 0; i < rows.size(); ++i) {
        RC_ASSERT(std::equal(got.begin() + i * kIndexWidth, got.begin() + (i + 1) * kIndexWidth,
                             full.outIdx.begin() + rows[i] * kIndexWidth));
    }
}

void checkLongRows(ValueMode mode, uint32_t seed) {
    int32_t const S = 2200;
    PrefillCase c = test::randomPrefill(seed, DType::kBf16, 1, S, {S}, mode);
    c.keepLogits = false;
    std::vector<int64_t> rows = {2199, 2051, 2050, 2049, 2048, 2047, 0, 3, 1000, 2198};
    for (int64_t r = 7; r < S; r += 97) {
        rows.push_back(r);
    }
    std::vector<int32_t> const got = runPrefillRows(c, rows);
    PrefillResult const full = runPrefillByStages(c);
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_TRUE(std::equal(got.begin() + i * kIndexWidth, got.begin() + (i + 1) * kIndexWidth,
                               full.outIdx.begin() + rows[i] * kIndexWidth))
            << "row " << rows[i];
    }
    EXPECT_EQ(runPrefill(c).outIdx, full.outIdx);
}

TEST(PrefillRows, LongSequenceNormalValues) {
    checkLongRows(ValueMode::kNormal, 11);
}
TEST(PrefillRows, LongSequenceManyTies) {
    checkLongRows(ValueMode::kTies, 12);
}

TEST(PrefillRows, RejectsRowsOutsideTheBatch) {
    PrefillCase const c = test::randomPrefill(1, DType::kHalf, 2, 5, {5, 5}, ValueMode::kNormal);
    EXPECT_THROW(runPrefillRows(c, {10}), std::runtime_error);
    EXPECT_THROW(runPrefillRows(c, {-1}), std::runtime_error);
    EXPECT_TRUE(runPrefillRows(c, {}).empty());
}

} // namespace
} // namespace ref
} // namespace qsa

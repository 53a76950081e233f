// The bitwise diff reporter compares bit patterns: -0.0 vs +0.0 and two NaN payloads differ, equal bits pass,
// and a report names the row, column, both bit patterns and the count.
#include "testing/bits_diff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using qsa::testlib::BitsDiffOpts;
using qsa::testlib::bitsDiffReport;

float bitsFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

bool has(std::string const& s, std::string const& part) {
    return s.find(part) != std::string::npos;
}

TEST(BitsDiff, EqualBitsPass) {
    std::vector<float> const v = {1.0f, -0.0f, bitsFloat(0x7FC00001u), INFINITY};
    EXPECT_EQ(bitsDiffReport(v, v, BitsDiffOpts{"x"}), "");
}

TEST(BitsDiff, SignedZerosDiffer) {
    std::string const m = bitsDiffReport(std::vector<float>{1.0f, -0.0f}, std::vector<float>{1.0f, 0.0f}, {"z"});
    EXPECT_TRUE(has(m, "z: 1 of 2 elements differ in bits; first at element 1: got 0x80000000")) << m;
    EXPECT_TRUE(has(m, "expected 0x00000000")) << m;
}

TEST(BitsDiff, NaNPayloadsDiffer) {
    std::vector<float> const got = {bitsFloat(0x7FC00000u)}, want = {bitsFloat(0x7FC00001u)};
    std::string const m = bitsDiffReport(got, want, BitsDiffOpts{"nan"});
    EXPECT_TRUE(has(m, "got 0x7fc00000 (nan), expected 0x7fc00001 (nan)")) << m;
}

TEST(BitsDiff, NamesRowColumnBitsAndCount) {
    std::vector<uint16_t> want(12, 0x3C00), got = want;
    got[7] = 0x3C01; // row 1, col 3 of rows of 4
    got[11] = 0xFC00;
    BitsDiffOpts o{"K1a qNormed", "B=1"};
    o.rowWidth = 4;
    o.rowName = [](size_t r) { return "b=" + std::to_string(r); };
    o.colName = "d";
    o.value = qsa::testlib::BitsValue::kT;
    // The caller's cast of T (ref::toFloatOf(dt)); here half's values of the three patterns below.
    o.tValue = [](uint16_t h) { return h == 0x3C00 ? 1.0f : h == 0x3C01 ? 1.0009765625f : -INFINITY; };
    o.maxPrint = 2;
    std::string const m = bitsDiffReport(got, want, o);
    EXPECT_EQ(m, "K1a qNormed: 2 of 12 elements differ in bits in 2 rows [B=1]; first at row b=1, d=3: got 0x3c01 "
                 "(1.00098), expected 0x3c00 (1)\n  at row b=2, d=3: got 0xfc00 (-inf), expected 0x3c00 (1)");
    // Without labels: plain row and column; only the first shown by default.
    BitsDiffOpts p{"w"};
    p.rowWidth = 4;
    EXPECT_EQ(bitsDiffReport(got, want, p),
              "w: 2 of 12 elements differ in bits in 2 rows; first at row 1, col 3: got 0x3c01, expected 0x3c00");
}

TEST(BitsDiff, ComparedPrefixAndSizes) {
    std::vector<int32_t> want = {1, 2, 3, 4}, got = {1, 9, 3, -1};
    BitsDiffOpts o{"ids"};
    o.rowWidth = 2;
    o.compared = [](size_t) { return size_t(1); }; // only column 0 of each row
    EXPECT_EQ(bitsDiffReport(got, want, o), "");
    o.compared = nullptr;
    EXPECT_TRUE(has(bitsDiffReport(got, want, o), "ids: 2 of 4 elements differ in bits in 2 rows; first at row 0, "
                                                  "col 1: got 0x00000009 (9), expected 0x00000002 (2)"));
    EXPECT_EQ(bitsDiffReport(std::vector<int32_t>{1}, want, o), "ids: got 1 elements, expected 4");
}

} // namespace

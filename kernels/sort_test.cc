// Sort stage (launchQsaSortRows, CUB segmented radix sort, descending, stable) against reference
// sortRows on host-written keys, bit for bit (contract section 4, "Selection"): -0.0 and +0.0 compare
// equal and keep input order, NaN orders by its bits, +inf / -FLT_MAX / many equal values; whole rows
// are sorted, invisible entries included; the inputs are left as they were.
#include <cfloat>
#include <cmath>

#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

enum class Keys { kRandom, kThreeValues, kAllEqual, kSpecials, kLowBits, kPrefixThenMin };

char const* keysName(Keys k) {
    static char const* const names[] = {"random",   "threeValues", "allEqual",
                                        "specials", "lowBits",     "prefixThenMinusFltMax"};
    static_assert(std::size(names) == size_t(Keys::kPrefixThenMin) + 1, "one name per Keys, in declaration order");
    return enumName(k, names);
}

std::vector<float> makeKeys(Keys kind, int32_t rows, int32_t cols, Rng& rng) {
    std::vector<float> k(size_t(rows) * cols);
    static uint32_t const specials[] = {0x80000000u, 0x00000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                                        0x7FC00001u, 0xFFC00000u, 0x7F800001u, 0xFF7FFFFFu, 0x7F7FFFFFu,
                                        0x00000001u, 0x80000001u, 0x3F800000u};
    for (int32_t r = 0; r < rows; ++r) {
        int32_t vis = static_cast<int32_t>(rng() % (cols + 1));
        for (int32_t c = 0; c < cols; ++c) {
            float& x = k[size_t(r) * cols + c];
            switch (kind) {
            case Keys::kRandom:
                x = rng.uniform(0.0f, 10.0f);
                break;
            case Keys::kThreeValues:
                x = static_cast<float>(rng() % 3) * 0.25f;
                break;
            case Keys::kAllEqual:
                x = 1.5f;
                break;
            case Keys::kSpecials:
                x = bitsFloat(specials[rng() % 13]);
                break;
            case Keys::kLowBits:
                x = bitsFloat(0x3F800000u + static_cast<uint32_t>(rng() % 5) * 0x10101u);
                break;
            case Keys::kPrefixThenMin:
                // What K2 writes: a visible prefix (+0.0, positive, +inf), then -FLT_MAX.
                x = c < vis ? (rng() % 4 == 0 ? 0.0f : (rng() % 50 == 0 ? INFINITY : float(rng() % 7))) : -FLT_MAX;
                break;
            }
        }
    }
    return k;
}

void runCase(int32_t rows, int32_t cols, Keys kind, bool idsValues, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> keys = makeKeys(kind, rows, cols, rng);
    std::vector<int32_t> vals(size_t(rows) * cols);
    if (idsValues) {
        ref::idsFill(vals.data(), rows, cols);
    } else {
        for (auto& v : vals)
            v = static_cast<int32_t>(rng());
    }
    std::string p = params("numRows=", rows, " numBlocks=", cols, " keys=", keysName(kind),
                           " values=", idsValues ? "ids" : "random", " seed=", seed);
    SCOPED_TRACE(p);
    size_t n = keys.size();
    std::vector<float> eKeys(n);
    std::vector<int32_t> eVals(n);
    ref::sortRows(keys.data(), eKeys.data(), vals.data(), eVals.data(), rows, cols);

    DevBuf<float> kIn(keys), kOut(n);
    DevBuf<int32_t> vIn(vals), vOut(n);
    kOut.fillBytes(0xFF);
    vOut.fillBytes(0xFF);
    size_t tempBytes = kn::getQsaSortTempBytes(rows, cols);
    DevBuf<uint8_t> temp(tempBytes);
    temp.fillBytes(0xFF);
    onStream([&](cudaStream_t stream) {
        kn::launchQsaSortRows(kIn.get(), kOut.get(), vIn.get(), vOut.get(), rows, cols, temp.get(), tempBytes, stream);
    });
    EXPECT_TRUE(bitsEqual(eVals, vOut.download(), {"sorted values", p, size_t(cols)}));
    EXPECT_TRUE(bitsEqual(eKeys, kOut.download<float>(), {"sorted keys", p, size_t(cols)}));
    EXPECT_TRUE(bitsEqual(keys, kIn.download<float>(), {"keysIn (must be unchanged)", p, size_t(cols)}));
    EXPECT_TRUE(bitsEqual(vals, vIn.download(), {"valuesIn (must be unchanged)", p, size_t(cols)}));
}

class SortTest : public ::testing::TestWithParam<Keys> {};

TEST_P(SortTest, Shapes) {
    uint64_t seed = 1000 + static_cast<uint64_t>(GetParam());
    for (auto rc : std::vector<std::pair<int, int>>{{1, 1}, {3, 5}, {7, 3}, {64, 514}, {300, 2048}, {2, 16384}}) {
        runCase(rc.first, rc.second, GetParam(), true, seed++);
        runCase(rc.first, rc.second, GetParam(), false, seed++);
    }
}

INSTANTIATE_TEST_SUITE_P(Keys, SortTest,
                         ::testing::Values(Keys::kRandom, Keys::kThreeValues, Keys::kAllEqual, Keys::kSpecials,
                                           Keys::kLowBits, Keys::kPrefixThenMin),
                         [](::testing::TestParamInfo<Keys> const& i) { return std::string(keysName(i.param)); });

TEST(SortTempBytes, NonZero) {
    EXPECT_GT(kn::getQsaSortTempBytes(256, 2048), 0u);
    EXPECT_GT(kn::getQsaSortTempBytes(1, 1), 0u);
}

} // namespace
} // namespace ktest
} // namespace qsa

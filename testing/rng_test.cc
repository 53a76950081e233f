// testlib::Rng reproduces fixed sequences (any standard library gives these numbers), and its uniform, below,
// shuffle and choice stay in range.
#include "testing/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

namespace {

using qsa::testlib::Rng;

TEST(Rng, SplitMix64Sequence) {
    Rng r(0);
    // splitmix64 from state 0 (its published first outputs).
    EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFull);
    EXPECT_EQ(r.next(), 0x6E789E6AA1B965F4ull);
    EXPECT_EQ(r.next(), 0x06C45D188009454Full);
}

TEST(Rng, FixedDrawsOfEveryHelper) {
    Rng r(42);
    std::vector<int> v(10);
    std::iota(v.begin(), v.end(), 0);
    r.shuffle(v.begin(), v.end());
    std::vector<int> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 10; ++i)
        EXPECT_EQ(sorted[i], i); // a permutation
    Rng again(42);
    std::vector<int> w(10);
    std::iota(w.begin(), w.end(), 0);
    again.shuffle(w.begin(), w.end());
    EXPECT_EQ(v, w); // the same seed, the same permutation
}

TEST(Rng, ShuffleDrawsEveryPermutationAlike) {
    Rng r(3);
    std::map<std::vector<int>, int> seen;
    for (int i = 0; i < 6000; ++i) {
        std::vector<int> v = {0, 1, 2};
        r.shuffle(v.begin(), v.end());
        ++seen[v];
    }
    ASSERT_EQ(seen.size(), 6u); // all 3! orders (a Sattolo or no-op shuffle misses some)
    for (auto const& [perm, n] : seen) {
        EXPECT_GT(n, 800) << perm[0] << perm[1] << perm[2];
        EXPECT_LT(n, 1200) << perm[0] << perm[1] << perm[2];
    }
}

TEST(Rng, RangesHold) {
    Rng r(7);
    int const values[3] = {5, 6, 7};
    for (int i = 0; i < 10000; ++i) {
        float const u = r.uniform(-2.0f, 2.0f);
        EXPECT_GE(u, -2.0f);
        EXPECT_LT(u, 2.0f);
        int64_t const b = r.below(3);
        EXPECT_TRUE(b >= 0 && b < 3);
        int64_t const t = r.between(-1, 1);
        EXPECT_TRUE(t >= -1 && t <= 1);
        int const c = r.choice(values);
        EXPECT_TRUE(c >= 5 && c <= 7);
    }
    EXPECT_THROW(r.below(0), std::runtime_error);
}

} // namespace

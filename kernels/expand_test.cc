// K4 expand (launchQsaExpand) against reference expand, bit for bit (contract section 4): out[4i + j] =
// sel[i] * 4 + j for i < kSel = min(512, nVis), then the causal tail 4 nVis + j for j < (t + 1) % 4, then
// -1; padded rows all -1; only rows [rowBegin, rowEnd) are written.
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

struct ECase {
    int32_t B, S;
    std::vector<int32_t> ctx;
    int32_t rowBegin, rowEnd; // rowEnd < 0: B * S
};

void runCase(ECase k, uint64_t seed) {
    int32_t const MB = (k.S + 3) / 4;
    if (k.rowEnd < 0)
        k.rowEnd = k.B * k.S;
    Rng rng(seed);
    // Each row's sorted ids: a permutation of [0, MB) (what the sort emits).
    std::vector<int32_t> ids(size_t(k.rowEnd - k.rowBegin) * MB);
    for (int32_t r = 0; r < k.rowEnd - k.rowBegin; ++r) {
        int32_t* row = &ids[size_t(r) * MB];
        std::iota(row, row + MB, 0);
        rng.shuffle(row, row + MB);
    }
    std::string p =
        params("B=", k.B, " S=", k.S, " ctx=", ctxStr(k.ctx), " rows=[", k.rowBegin, ",", k.rowEnd, ") seed=", seed);
    SCOPED_TRACE(p);
    size_t n = size_t(k.B) * k.S * ref::kIndexWidth;
    std::vector<int32_t> expect(n, 0x5A5A5A5A);
    ref::expand(expect.data(), ids.data(), k.ctx.data(), k.B, k.S, k.rowBegin, k.rowEnd);
    DevBuf<int32_t> dIds(ids), dCtx(k.ctx), out(n);
    out.fillBytes(0x5A);
    onStream([&](cudaStream_t stream) {
        kn::launchQsaExpand(out.get(), dIds.get(), dCtx.get(), k.B, k.S, k.rowBegin, k.rowEnd, stream);
    });
    EXPECT_TRUE(bitsEqual(expect, out.download(), {"outIdx", p, size_t(ref::kIndexWidth)}));
}

TEST(ExpandTest, SmallContexts) {
    runCase({13, 9, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -2, 500}, 0, -1}, 1);
    runCase({3, 1, {0, 1, 5}, 0, -1}, 2);
}

TEST(ExpandTest, AroundBudget) {
    // nVis around 512: kSel switches from nVis to 512, tails of every length.
    runCase({10, 2060, {2044, 2045, 2046, 2047, 2048, 2049, 2050, 2051, 2052, 2060}, 0, -1}, 3);
    runCase({2, 4099, {4099, 4096}, 0, -1}, 4);
}

TEST(ExpandTest, RowChunks) {
    std::vector<int32_t> ctx = {2053, 2000, 2049};
    uint64_t seed = 10;
    for (auto r : std::vector<std::pair<int, int>>{{0, 2053}, {2053, 4000}, {4000, 6159}, {2047, 2052}}) {
        runCase({3, 2053, ctx, r.first, r.second}, seed++);
    }
}

} // namespace
} // namespace ktest
} // namespace qsa

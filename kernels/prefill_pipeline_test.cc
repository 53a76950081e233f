// runQsaIndexerPrefill against reference runPrefill / runPrefillRows, bit for bit, half and bf16
// (contract sections 5-7): outIdx, the pool after the run (paged variant + raw-k tail scatter), outIdx
// identical with and without a pool, independence from the workspace's contents, determinism,
// chunking by Rc, S up to 8192 with B up to 8, and S = 65536 on sampled rows.
#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

QSA_DTYPE_TEST_SUITE(PrefillTest);

// Full check of one case: reference vs GPU without a pool, then with a pool (outIdx unchanged, pool
// after the run equal to the reference's).
template <typename P>
void checkCase(PrefillSpec const& s, bool withPool, Pages pages = Pages::kFull) {
    using T = typename P::T;
    DType const dt = P::kDt;
    std::string p = specStr(dt, s);
    SCOPED_TRACE(p);
    ref::PrefillCase c = makePrefillCase(dt, s);
    ref::PrefillResult r = ref::runPrefill(c);
    EXPECT_TRUE(bitsEqual(r.outIdx, gpuPrefill<T>(c), {"outIdx", p, size_t(ref::kIndexWidth)}));
    if (!withPool)
        return;
    Rng rng(s.seed + 77);
    int32_t pagesPerSeq = (s.S + ref::kTokensPerPage - 1) / ref::kTokensPerPage;
    ref::PoolDims dims{s.B * pagesPerSeq + 2, pagesPerSeq, 2, 384, 256};
    c.hasPool = true;
    c.pool = makeHostPool(dt, s.B, dims, pages, rng);
    std::string pp = p + " " + poolParams(dims) + pagesName(pages);
    ref::PrefillResult rp = ref::runPrefill(c);
    EXPECT_TRUE(bitsEqual(r.outIdx, rp.outIdx, {"reference outIdx with pool vs without", pp, 2051}));
    std::vector<uint16_t> poolAfter;
    std::vector<int32_t> out = gpuPrefill<T>(c, 0x00, 0, &poolAfter);
    EXPECT_TRUE(bitsEqual(r.outIdx, out, {"outIdx (with pool)", pp, size_t(ref::kIndexWidth)}));
    EXPECT_TRUE(bitsEqual(rp.poolAfter, poolAfter, {"pool after prefill", pp, size_t(dims.poolHeadDim), dt}));
}

TYPED_TEST(PrefillTest, SmallContexts) {
    // ctx = 0..9 on S = 9 (S not a multiple of 4), plus out-of-range ctx (clamped to [0, S]).
    PrefillSpec s = prefillSpec(13, 9, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -3, 1000}, 1);
    for (Mode m : {Mode::kNormal, Mode::kLowEntropy, Mode::kSpecial}) {
        s.qk = m;
        ++s.seed;
        checkCase<TypeParam>(s, true);
        checkCase<TypeParam>(s, true, Pages::kHoles);
    }
    s.B = 3;
    s.S = 1;
    s.ctx = {0, 1, 2};
    checkCase<TypeParam>(s, true);
}

TYPED_TEST(PrefillTest, AroundBudget) {
    // nVis around 512 (t around 4 * 512) with every tail length; S not a multiple of 4.
    PrefillSpec s = prefillSpec(8, 2053, {2047, 2048, 2049, 2050, 2051, 2052, 2053, 2044}, 100);
    checkCase<TypeParam>(s, true);
    s.qk = Mode::kLowEntropy; // many equal logits: the tie rule decides which blocks are kept
    s.seed = 101;
    checkCase<TypeParam>(s, true, Pages::kHoles);
}

TYPED_TEST(PrefillTest, NumericExtremes) {
    PrefillSpec s = prefillSpec(3, 301, {301, 150, 7}, 1);
    uint64_t seed = 200;
    for (Gamma g : {Gamma::kExtreme, Gamma::kSpecial}) {
        for (Mode m : {Mode::kNormal, Mode::kSpecial, Mode::kWide}) {
            s.gamma = g;
            s.qk = m;
            s.seed = seed++;
            checkCase<TypeParam>(s, true);
        }
    }
    for (float eps : {0.0f, -1.0f, std::numeric_limits<float>::infinity()}) {
        s.gamma = Gamma::kSmall;
        s.qk = Mode::kLowEntropy;
        s.rmsEps = eps;
        s.seed = seed++;
        checkCase<TypeParam>(s, false);
    }
}

TYPED_TEST(PrefillTest, ChunkBoundariesInsideSequences) {
    // S = 4096: MB = 1024, Rc = 8192 rows, so B = 3 has a chunk boundary inside sequence 2.
    PrefillSpec s = prefillSpec(3, 4096, {1500, 2100, 4093}, 300, Mode::kLowEntropy);
    ASSERT_EQ(ref::prefillChunkRows(3, 4096), 8192);
    checkCase<TypeParam>(s, false);
}

TYPED_TEST(PrefillTest, LargeBatch8Seq8192) {
    // B = 8, S = 8192 (Rc = 4096: 16 chunks, boundaries at every half sequence).
    PrefillSpec s = prefillSpec(8, 8192, {8192, 8191, 8190, 8189, 6000, 4097, 2053, 0}, 400);
    checkCase<TypeParam>(s, false);
}

TYPED_TEST(PrefillTest, DeterministicWhateverTheWorkspaceHeld) {
    // Contract 7.4 and section 6: two runs bitwise equal, workspace poisoned with 0xFF (NaN) or 0x00,
    // a workspace sized for a larger S, the legacy default stream and a created stream.
    PrefillSpec s = prefillSpec(4, 2060, {2060, 2049, 17, 0}, 500, Mode::kLowEntropy);
    std::string p = specStr(TypeParam::kDt, s);
    ref::PrefillCase c = makePrefillCase(TypeParam::kDt, s);
    using T = typename TypeParam::T;
    std::vector<int32_t> a = gpuPrefill<T>(c, 0xFF);
    Stream st;
    EXPECT_TRUE(bitsEqual(a, gpuPrefill<T>(c, 0x00, 0, nullptr, st.get()), {"outIdx run 2 (ws 0x00)", p, 2051}));
    EXPECT_TRUE(bitsEqual(a, gpuPrefill<T>(c, 0x7F, 8192, nullptr, st.get()), {"outIdx (ws for S=8192)", p, 2051}));
    EXPECT_TRUE(bitsEqual(a, ref::runPrefill(c).outIdx, {"outIdx vs reference", p, 2051}));
}

TYPED_TEST(PrefillTest, LongSequenceSampledRows) {
    // S = 65536, B = 1 (Rc = 512: 128 chunks), checked on sampled rows with runPrefillRows.
    PrefillSpec s = prefillSpec(1, 65536, {65533}, 600);
    std::string p = specStr(TypeParam::kDt, s);
    SCOPED_TRACE(p);
    ref::PrefillCase c = makePrefillCase(TypeParam::kDt, s);
    std::vector<int32_t> out = gpuPrefill<typename TypeParam::T>(c);
    // The first rows, rows around 4 * 512, the last valid rows and then padded ones, 24 random rows.
    std::vector<int64_t> rows;
    for (auto range : {std::pair<int64_t, int64_t>{0, 10}, {2045, 2054}, {65527, 65536}}) {
        for (int64_t t = range.first; t < range.second; ++t)
            rows.push_back(t);
    }
    Rng rng(s.seed);
    for (int i = 0; i < 24; ++i)
        rows.push_back(static_cast<int64_t>(rng() % 65536));
    std::vector<int32_t> expect = ref::runPrefillRows(c, rows);
    std::vector<int32_t> got(rows.size() * ref::kIndexWidth);
    for (size_t i = 0; i < rows.size(); ++i) {
        std::copy_n(&out[size_t(rows[i]) * ref::kIndexWidth], ref::kIndexWidth, &got[i * ref::kIndexWidth]);
    }
    EXPECT_TRUE(bitsEqual(expect, got, {"outIdx sampled rows", p + " rows(in order)=" + ctxStr(rows), 2051}));
}

} // namespace
} // namespace ktest
} // namespace qsa

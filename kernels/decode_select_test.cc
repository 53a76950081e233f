// B3 decode select + expand (launchQsaDecodeSelect) against reference decodeSelect on host-written
// logits, bit for bit (contract section 4, "Selection" and K4): the set of the first min(512, nVis)
// blocks by (logit desc, id asc), emitted in ascending id, then the tail ctx % 4; when nVis <= 512 no
// logit is read; invalid rows all -1. Ties at the threshold are the point of this file.
#include <cfloat>

#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

enum class Row {
    kThreeValues,   // only 3 distinct values: the threshold value has hundreds of ties
    kNaNUnread,     // nVis <= 512: every logit is NaN and must not be read
    kThresholdTies, // 400 distinct high values, 300 equal at the threshold, 300 below
    kLowBits,       // values differing only in the lowest key byte (last radix pass decides)
    kHighBits,      // values differing only in the highest key byte
    kSpecials,      // -0.0 / +0.0 / NaN (both signs) / +-inf / -FLT_MAX / subnormals
    kAllEqual,
    kRandom,
};

char const* rowName(Row r) {
    static char const* const names[] = {"threeValues", "nanUnread", "thresholdTies", "lowBits",
                                        "highBits",    "specials",  "allEqual",      "random"};
    static_assert(std::size(names) == size_t(Row::kRandom) + 1, "one name per Row, in declaration order");
    return enumName(r, names);
}

void fillRow(float* row, int32_t nVis, Row kind, Rng& rng) {
    static uint32_t const specials[] = {0x80000000u, 0x00000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
                                        0x7F800001u, 0xFF7FFFFFu, 0x00000001u, 0x80000001u, 0x3F800000u, 0x40000000u};
    std::vector<int32_t> perm(nVis);
    std::iota(perm.begin(), perm.end(), 0);
    rng.shuffle(perm.begin(), perm.end());
    for (int32_t i = 0; i < nVis; ++i) {
        float& x = row[perm[i]];
        switch (kind) {
        case Row::kThreeValues:
            x = 1.0f + static_cast<float>(rng() % 3);
            break;
        case Row::kNaNUnread:
            x = bitsFloat(0x7FC00000u | static_cast<uint32_t>(i));
            break;
        case Row::kThresholdTies:
            x = i < 400 ? 5.0f + static_cast<float>(i) * 0.01f : (i < 700 ? 2.0f : 1.0f);
            break;
        case Row::kLowBits:
            x = bitsFloat(0x3F800000u + static_cast<uint32_t>(rng() % 256));
            break;
        case Row::kHighBits:
            x = bitsFloat((static_cast<uint32_t>(rng() % 64) << 24) | 0x00123456u);
            break;
        case Row::kSpecials:
            x = bitsFloat(specials[rng() % 12]);
            break;
        case Row::kAllEqual:
            x = 0.0f;
            break;
        case Row::kRandom:
            x = rng.uniform(0.0f, 100.0f);
            break;
        }
    }
}

struct SelRow {
    int32_t ctx;
    Row kind;
};

void runCase(std::vector<SelRow> const& rows, int32_t maxBlocks, uint64_t seed) {
    int32_t const B = static_cast<int32_t>(rows.size());
    Rng rng(seed);
    // Beyond each row's nVis the logits are NaN: never read.
    std::vector<float> logits(size_t(B) * maxBlocks, bitsFloat(0x7FC0DEADu));
    std::vector<int32_t> ctx(B);
    std::ostringstream os;
    os << "maxBlocks=" << maxBlocks << " seed=" << seed << " rows={";
    for (int32_t b = 0; b < B; ++b) {
        ctx[b] = rows[b].ctx;
        int32_t nVis = std::min(std::max(ctx[b], 0) / 4, maxBlocks);
        fillRow(&logits[size_t(b) * maxBlocks], nVis, rows[b].kind, rng);
        os << (b ? ", " : "") << b << ":ctx=" << ctx[b] << "/" << rowName(rows[b].kind);
    }
    os << "}";
    std::string p = os.str();
    SCOPED_TRACE(p);
    size_t n = size_t(B) * ref::kIndexWidth;
    std::vector<int32_t> expect(n, 0x5A5A5A5A);
    ref::decodeSelect(expect.data(), logits.data(), ctx.data(), B, maxBlocks);
    DevBuf<float> dLogits(logits);
    DevBuf<int32_t> dCtx(ctx), out(n);
    out.fillBytes(0x5A);
    onStream([&](cudaStream_t stream) {
        kn::launchQsaDecodeSelect(out.get(), dLogits.get(), dCtx.get(), B, maxBlocks, stream);
    });
    EXPECT_TRUE(bitsEqual(expect, out.download(), {"outIdx", p, size_t(ref::kIndexWidth)}));
    EXPECT_TRUE(bitsEqual(logits, dLogits.download<float>(), {"logits (read only)", p, size_t(maxBlocks)}));
}

TEST(DecodeSelectTest, TiesAtThreshold) {
    uint64_t seed = 1;
    for (int rep = 0; rep < 4; ++rep) {
        runCase({{8003, Row::kThreeValues},
                 {8000, Row::kThreeValues},
                 {4001, Row::kThresholdTies},
                 {2052, Row::kThreeValues},
                 {2053, Row::kAllEqual},
                 {8002, Row::kAllEqual},
                 {12000, Row::kLowBits},
                 {6000, Row::kHighBits},
                 {9000, Row::kSpecials},
                 {3001, Row::kRandom}},
                3000, seed++);
    }
}

TEST(DecodeSelectTest, SmallNVisReadsNoLogit) {
    std::vector<SelRow> rows;
    for (int32_t c : {1, 2, 3, 4, 5, 7, 8, 9, 100, 2044, 2047, 2048, 2049, 2050, 2051}) {
        rows.push_back({c, Row::kNaNUnread});
    }
    runCase(rows, 600, 10);
}

TEST(DecodeSelectTest, InvalidRowsAndEdges) {
    // ctx < 1 and ctx / 4 > maxBlocks are invalid (all -1); ctx / 4 == maxBlocks is valid also when
    // ceilDiv(ctx, 4) > maxBlocks (floor rule, contract section 5): 4 * 700 + 3 is the last valid.
    runCase({{0, Row::kRandom},
             {-1, Row::kRandom},
             {4 * 700 + 4, Row::kRandom},
             {4 * 700 + 7, Row::kRandom},
             {4 * 700 + 3, Row::kThreeValues},
             {4 * 700 + 1, Row::kRandom},
             {4 * 700, Row::kRandom},
             {4 * 700 - 1, Row::kThreeValues},
             {2053, Row::kSpecials}},
            700, 20);
}

TEST(DecodeSelectTest, LongContext) {
    runCase({{131072, Row::kRandom},
             {131075, Row::kThreeValues},
             {131073, Row::kLowBits},
             {100003, Row::kSpecials},
             {131072, Row::kAllEqual}},
            32769, 30);
}

// A batch of more rows than an H100 holds 8-CTA clusters at once (about 49: a second wave of clusters).
TEST(DecodeSelectTest, ManyRows) {
    std::vector<SelRow> rows;
    Row const kinds[] = {Row::kThreeValues, Row::kThresholdTies, Row::kLowBits, Row::kRandom, Row::kSpecials};
    for (int b = 0; b < 80; ++b)
        rows.push_back({4 * (520 + 37 * b) + b % 4, kinds[b % 5]});
    runCase(rows, 3500, 40);
}

TEST(ZeroSplitCountersTest, OnlyRowsBelowBatch) {
    for (auto bk : std::vector<std::pair<int, int>>{{1, 1}, {7, 2}, {64, 3}}) {
        int32_t maxB = bk.first + 3;
        std::vector<int32_t> init(size_t(maxB) * bk.second);
        for (size_t i = 0; i < init.size(); ++i)
            init[i] = static_cast<int32_t>(i * 7 + 1);
        std::vector<int32_t> expect = init;
        ref::zeroSplitCounters(expect.data(), bk.first, bk.second);
        DevBuf<int32_t> d(init);
        onStream([&](cudaStream_t stream) { kn::launchQsaZeroSplitCounters(d.get(), bk.first, bk.second, stream); });
        std::string p = params("batchSize=", bk.first, " numKVHeads=", bk.second);
        EXPECT_TRUE(bitsEqual(expect, d.download(), {"splitCounters", p, size_t(bk.second)}));
    }
}

} // namespace
} // namespace ktest
} // namespace qsa

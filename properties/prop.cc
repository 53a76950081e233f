// Shared machinery of the property tests (see prop.h).
#include "properties/prop.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "checks/levels.h"
#include "fixtures/fixture.h"
#include "reference/numerics.h"
#include "reference/rowops.h"
#include "reference/stages.h"
#include "testing/bits_diff.h"
#include "testing/rng.h"

namespace qsa {
namespace prop {
namespace {

// The last failing execution's cases of the test now running (keyed by nothing: tests run one at a time).
struct Pending {
    std::string contract, description;
    std::vector<ref::PrefillCase> prefill;
    std::vector<ref::DecodeCase> decode;
};
std::unique_ptr<Pending>& pending() {
    static std::unique_ptr<Pending> p;
    return p;
}

std::string fixtureName(std::string id, size_t k) {
    for (char& ch : id)
        ch = std::isalnum(static_cast<unsigned char>(ch)) ? char(std::tolower(ch)) : '_';
    return "prop_" + id + (k ? "_" + std::to_string(k) : "");
}

// Writes every case of the pending counterexample as a fixture whose expected outputs come from the
// reference, and prints the commands that install them (fixtures/fixture.h: captureFixture).
void writePending(std::string const& id) {
    std::unique_ptr<Pending> p = std::move(pending());
    if (!p)
        return;
    size_t k = 0;
    auto write = [&](auto const& c) {
        try {
            fixtures::Fixture f = fixtures::makeFixtureFromReference(c, p->description.substr(0, 400), p->contract,
                                                                     "properties/" + id, std::nullopt, false);
            std::cout << fixtures::captureFixture(f, fixtureName(id, k++)) << std::endl;
        } catch (std::exception const& e) {
            std::cout << "capture of " << id << " failed: " << e.what() << std::endl;
        }
    };
    for (auto const& c : p->prefill)
        write(c);
    for (auto const& c : p->decode)
        write(c);
}

// ---- shards and seeds (README "Sharding and remote GPU pools") -------------------------------------------
// A sharded property target is sharded by gtest (Bazel exports GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS): each
// shard runs a subset of the properties, each of them at its WHOLE default budget, so the coverage floors are
// judged on the same number of cases as in an unsharded run. Each shard draws its own RapidCheck seed from
// the base seed and its index.
struct ShardEnv {
    int index = 0, total = 1;
    ShardEnv() {
        auto num = [](char const* a, char const* b) -> char const* {
            char const* v = std::getenv(a);
            return v != nullptr && *v != 0 ? v : std::getenv(b);
        };
        char const* t = num("TEST_TOTAL_SHARDS", "GTEST_TOTAL_SHARDS");
        char const* i = num("TEST_SHARD_INDEX", "GTEST_SHARD_INDEX");
        if (t != nullptr && i != nullptr && std::atoi(t) > 1) {
            total = std::atoi(t);
            index = std::min(std::max(std::atoi(i), 0), total - 1);
        }
    }
};
ShardEnv const& shardEnv() {
    static ShardEnv const e;
    return e;
}

bool rcParamsHas(char const* key) {
    char const* env = std::getenv("RC_PARAMS");
    return env != nullptr && std::string(env).find(key) != std::string::npos;
}

// The seed of shard `i` from the base seed: the low 32 bits of splitmix64's output i + 1 from `base`
// (testing/rng.h's generator seeded with base + i steps of its increment).
uint64_t shardSeed(uint64_t base, int i) {
    return testlib::Rng(base + 0x9E3779B97F4A7C15ull * uint64_t(i)).next() & 0xFFFFFFFFull;
}

// QSA_BUDGET_SCALE (certify: one factor for every property) times a property's default case count.
int scaledDefault(int defaultCases) {
    char const* env = std::getenv("QSA_BUDGET_SCALE");
    double const f = env != nullptr && *env != 0 ? std::atof(env) : 1.0;
    if (!(f > 0))
        throw std::runtime_error("QSA_BUDGET_SCALE must be a positive number, got '" + std::string(env) + "'");
    return std::max(1, int(std::lround(defaultCases * f)));
}

} // namespace

void checkProperty(std::string const& id, int defaultCases, rc::detail::Property const& property) {
    // Level and profile (contract section 8) from checks/registry.tsv; what is judged from QSA_LEVELS/QSA_PROFILE.
    checks::CheckInfo const info = checks::lookup(id);
    if (!info.registered()) {
        ADD_FAILURE() << id << " has no row in checks/registry.tsv: give it a level and a profile";
        return;
    }
    checks::Selection sel;
    try {
        sel = checks::selectionFromEnv();
    } catch (std::exception const& e) {
        ADD_FAILURE() << e.what();
        return;
    }
    if (!sel.judged(info)) {
        std::cout << checks::notJudgedLine(info, sel) << std::endl;
        GTEST_SKIP() << checks::notJudgedLine(info, sel);
    }
    rc::detail::TestMetadata metadata;
    metadata.id = id;
    metadata.description = id;
    rc::detail::TestParams params = rc::detail::configuration().testParams;
    // Every case of the property, with this shard's seed; RC_PARAMS max_success= / seed= still override.
    ShardEnv const& sh = shardEnv();
    int const cases = rcParamsHas("max_success") ? params.maxSuccess : scaledDefault(defaultCases);
    uint64_t base = params.seed;
    if (char const* b = std::getenv("QSA_BASE_SEED"))
        base = std::strtoull(b, nullptr, 10);
    uint64_t const seed = rcParamsHas("seed=") ? params.seed : (sh.total > 1 ? shardSeed(base, sh.index) : base);
    std::ostringstream seedLine;
    seedLine << "QSA_SEED " << id << " base=" << base << " shard=" << sh.index << "/" << sh.total << " seed=" << seed
             << " cases=" << cases << " (reproduce: RC_PARAMS=\"seed=" << seed << " max_success=" << cases
             << "\" --gtest_filter=" << id << ")";
    std::cout << seedLine.str() << std::endl;
    params.maxSuccess = cases;
    params.seed = seed;
    pending().reset();
    auto const result = rc::detail::checkProperty(property, metadata, params);
    if (result.template is<rc::detail::SuccessResult>()) {
        pending().reset();
        return;
    }
    std::ostringstream ss;
    rc::detail::printResultMessage(result, ss);
    writePending(id);
    std::cout << checks::failedLine(info) << std::endl;
    ADD_FAILURE() << checks::failedLine(info) << "\n"
                  << id << " [" << checks::tags(info) << "]: " << info.what << "\n"
                  << seedLine.str() << "\n"
                  << ss.str();
}

Capture::Capture(char const* contract, std::string description)
    : contract_(contract), description_(std::move(description)), uncaught_(std::uncaught_exceptions()) {
    RC_LOG() << description_ << "\n";
}

Capture::~Capture() {
    if (std::uncaught_exceptions() <= uncaught_)
        return;
    auto p = std::make_unique<Pending>();
    p->contract = contract_;
    p->description = description_;
    for (auto const* c : prefill_)
        p->prefill.push_back(*c);
    for (auto const* c : decode_)
        p->decode.push_back(*c);
    pending() = std::move(p);
}

std::string rowLayoutViolation(int32_t const* row, int32_t t, bool valid, bool ascendingBlocks) {
    int32_t const W = ref::kIndexWidth;
    std::ostringstream os;
    if (!valid) {
        for (int32_t i = 0; i < W; ++i) {
            if (row[i] != -1) {
                os << "padded row: entry " << i << " is " << row[i] << ", expected -1";
                return os.str();
            }
        }
        return "";
    }
    int32_t const nVis = (t + 1) / 4, kSel = std::min(512, nVis), tail = (t + 1) % 4;
    std::set<int32_t> seen;
    int32_t prevBlock = -1;
    for (int32_t i = 0; i < kSel; ++i) {
        int32_t const g = row[4 * i];
        if (g < 0 || g % 4 != 0 || g / 4 >= nVis) {
            os << "t=" << t << " nVis=" << nVis << ": group " << i << " starts with " << g
               << ", expected 4*g for a visible block g < nVis";
            return os.str();
        }
        for (int32_t j = 1; j < 4; ++j) {
            if (row[4 * i + j] != g + j) {
                os << "t=" << t << ": group " << i << " entry " << j << " is " << row[4 * i + j] << ", expected "
                   << g + j;
                return os.str();
            }
        }
        if (!seen.insert(g / 4).second) {
            os << "t=" << t << ": block " << g / 4 << " selected twice (group " << i << ")";
            return os.str();
        }
        if (ascendingBlocks && g / 4 <= prevBlock) {
            os << "t=" << t << ": decode blocks not ascending at group " << i << " (" << prevBlock << " then " << g / 4
               << ")";
            return os.str();
        }
        prevBlock = g / 4;
    }
    for (int32_t j = 0; j < tail; ++j) {
        if (row[4 * kSel + j] != 4 * nVis + j) {
            os << "t=" << t << " nVis=" << nVis << " kSel=" << kSel << ": tail entry " << j << " at " << 4 * kSel + j
               << " is " << row[4 * kSel + j] << ", expected " << 4 * nVis + j;
            return os.str();
        }
    }
    for (int32_t i = 4 * kSel + tail; i < W; ++i) {
        if (row[i] != -1) {
            os << "t=" << t << " nVis=" << nVis << " kSel=" << kSel << " tail=" << tail << ": entry " << i << " is "
               << row[i] << ", expected -1 (entries must be in [0, t] and stop after the tail)";
            return os.str();
        }
    }
    return "";
}

RowSelection selectionOf(int32_t const* row, int32_t t) {
    int32_t const nVis = (t + 1) / 4, kSel = std::min(512, nVis), tail = (t + 1) % 4;
    RowSelection s;
    for (int32_t i = 0; i < kSel; ++i)
        s.blocks.push_back(row[4 * i] < 0 ? row[4 * i] : row[4 * i] / 4);
    std::sort(s.blocks.begin(), s.blocks.end());
    s.tail.assign(row + 4 * kSel, row + 4 * kSel + tail);
    return s;
}

std::string show(RowSelection const& s) {
    std::ostringstream os;
    os << s.blocks.size() << " blocks {";
    for (size_t i = 0; i < s.blocks.size() && i < 24; ++i)
        os << (i ? "," : "") << s.blocks[i];
    if (s.blocks.size() > 24)
        os << ",...," << s.blocks.back();
    os << "} tail {";
    for (size_t i = 0; i < s.tail.size(); ++i)
        os << (i ? "," : "") << s.tail[i];
    return os.str() + "}";
}

std::string diffOutIdx(std::vector<int32_t> const& got, std::vector<int32_t> const& want, int32_t S, char const* what) {
    std::ostringstream os;
    if (got.size() != want.size()) {
        os << what << ": outIdx has " << got.size() << " entries, expected " << want.size();
        return os.str();
    }
    testlib::BitsDiff const d = testlib::findBitsDiff(got.data(), want.data(), got.size(), sizeof(int32_t));
    if (d.count == 0)
        return "";
    size_t const first = d.shown[0], row = first / ref::kIndexWidth;
    os << what << ": " << d.count << " outIdx entries differ; first at row b=" << row / S << " t=" << row % S << " col "
       << first % ref::kIndexWidth << ": got " << got[first] << ", expected " << want[first];
    return os.str();
}

std::string diffPool(std::vector<uint16_t> const& got, std::vector<uint16_t> const& want, ref::PoolDims const& d,
                     char const* what) {
    std::ostringstream os;
    if (got.size() != want.size()) {
        os << what << ": pool has " << got.size() << " elements, expected " << want.size();
        return os.str();
    }
    testlib::BitsDiff const bd = testlib::findBitsDiff(got.data(), want.data(), got.size(), sizeof(uint16_t));
    if (bd.count == 0)
        return "";
    size_t const first = bd.shown[0];
    os << what << ": " << bd.count << " pool elements differ; first at " << poolCell(d, first) << ": got 0x" << std::hex
       << got[first] << ", expected 0x" << want[first] << std::dec;
    return os.str();
}

std::string diffSequence(PrefillOut const& a, int32_t sa, int32_t from, PrefillOut const& b, int32_t sb, int32_t to,
                         int32_t rows, char const* what) {
    size_t const W = ref::kIndexWidth;
    for (int32_t t = 0; t < rows; ++t) {
        auto const* x = &a.outIdx[(size_t(from) * sa + t) * W];
        auto const* y = &b.outIdx[(size_t(to) * sb + t) * W];
        auto const m = std::mismatch(x, x + W, y);
        if (m.first != x + W) {
            return std::string(what) + ": sequence " + std::to_string(from) + " row t=" + std::to_string(t) + " col " +
                   std::to_string(m.first - x) + ": " + std::to_string(*m.first) + " vs " + std::to_string(*m.second);
        }
    }
    return "";
}

namespace {

// The stage read-backs' report (testlib::bitsDiffReport): `got` vs `want` as rows of rowElems elements, of
// which the first compared(r) of row r are specified (the rest is not compared; default all); row r is named
// rowName(r), a column colName ("d": a dim, "g": a block); T elements are shown as values of dt.
template <typename E>
std::string diffStage(char const* stage, char const* slot, std::vector<E> const& got, std::vector<E> const& want,
                      ref::DType dt, size_t rowElems, char const* colName, std::function<std::string(size_t)> rowName,
                      char const* against, std::function<size_t(size_t)> compared = nullptr) {
    testlib::BitsDiffOpts o = testlib::tRowOpts(std::string(stage) + " (workspace slot " + slot +
                                                    ", contract section 6) differs from " + against,
                                                rowElems, ref::toFloatOf(dt));
    o.rowName = std::move(rowName);
    o.colName = colName;
    o.compared = std::move(compared);
    return testlib::bitsDiffReport(got, want, o);
}

} // namespace

PrefillStages referencePrefillStages(ref::PrefillCase const& c) {
    int32_t const B = c.batchSize, S = c.seqLen, MB = (S + 3) / 4;
    PrefillStages s;
    s.qNormed.assign(size_t(B) * S * 512, 0);
    s.kbar.assign(size_t(B) * MB * 128, 0);
    ref::qPrep(c.dtype, s.qNormed.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wQ.data(),
               c.rmsEps, B, S);
    ref::kCompress(c.dtype, s.kbar.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wK.data(),
                   c.rmsEps, B, S, MB, 0, MB, 0);
    return s;
}

std::string diffPrefillStages(ref::PrefillCase const& c, PrefillOut const& got, PrefillStages const& want,
                              char const* against) {
    int32_t const S = c.seqLen, MB = (S + 3) / 4;
    auto qRow = [S](size_t r) {
        return "b=" + std::to_string(r / 4 / S) + " t=" + std::to_string(r / 4 % S) + " h=" + std::to_string(r % 4);
    };
    auto kRow = [MB](size_t r) { return "b=" + std::to_string(r / MB) + " g=" + std::to_string(r % MB); };
    std::string const m = diffStage("K1a", "qNormed", got.qNormed, want.qNormed, c.dtype, 128, "d", qRow, against);
    return m.empty() ? diffStage("K1b", "kbar", got.kbar, want.kbar, c.dtype, 128, "d", kRow, against) : m;
}

std::string diffDecodeStages(ref::DecodeCase const& c, DecodeOut const& got, ref::DecodeResult const& want,
                             char const* against) {
    auto qRow = [](size_t r) { return "b=" + std::to_string(r / 4) + " h=" + std::to_string(r % 4); };
    std::string const m = diffStage("B1", "qNormed", got.qNormed, want.qNormed, c.dtype, 128, "d", qRow, against);
    return m.empty() ? diffDecodeLogits(c, got, want, against) : m;
}

std::string diffDecodeLogits(ref::DecodeCase const& c, DecodeOut const& got, ref::DecodeResult const& want,
                             char const* against) {
    // Only the valid prefix g < ctx / 4 of a valid row is specified (section 5: B2 writes nothing else).
    auto lRow = [&c](size_t b) {
        return "b=" + std::to_string(b) + " (ctx " + std::to_string(c.contextLengths[b]) + ")";
    };
    auto valid = [&c](size_t b) {
        int32_t const ctx = c.contextLengths[b];
        return ref::decodeRowValid(ctx, c.maxBlocks) ? size_t(ctx / 4) : size_t(0);
    };
    return diffStage("B2", "logits", got.logits, want.logits, c.dtype, size_t(c.maxBlocks), "g", lRow, against, valid);
}

namespace {

std::vector<int64_t> sampleRows(ref::PrefillCase const& c, size_t randomRows, uint64_t seed) {
    int64_t const rows = int64_t(c.batchSize) * c.seqLen;
    int64_t const rc = ref::prefillChunkRows(c.batchSize, c.seqLen);
    std::set<int64_t> s;
    auto add = [&](int64_t r) {
        if (r >= 0 && r < rows)
            s.insert(r);
    };
    for (int64_t r = 0; r <= rows; r += rc) {
        for (int64_t d = -2; d <= 2; ++d)
            add(r + d);
    }
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int64_t const base = int64_t(b) * c.seqLen;
        int32_t const ctx = ref::caseCtx(c, b);
        for (int64_t t : {0, 1, 2, 3, 4, 2046, 2047, 2048, 2050, 2051})
            add(base + std::min<int64_t>(t, c.seqLen - 1));
        for (int64_t d = -5; d <= 1; ++d)
            add(base + ctx + d);
        add(base + c.seqLen - 1);
    }
    testlib::Rng rng(seed);
    for (size_t i = 0; i < randomRows; ++i)
        add(rng.below(rows));
    return {s.begin(), s.end()};
}

} // namespace

std::string sampledRowsMismatch(ref::PrefillCase const& c, std::vector<int32_t> const& got, size_t randomRows,
                                uint64_t seed, char const* what) {
    std::vector<int64_t> const rows = sampleRows(c, randomRows, seed);
    std::vector<int32_t> const want = ref::runPrefillRows(c, rows);
    size_t const W = ref::kIndexWidth;
    for (size_t i = 0; i < rows.size(); ++i) {
        if (!std::equal(want.begin() + i * W, want.begin() + (i + 1) * W, got.begin() + rows[i] * W)) {
            return std::string(what) + " b=" + std::to_string(rows[i] / c.seqLen) +
                   " t=" + std::to_string(rows[i] % c.seqLen) +
                   " differs (Rc=" + std::to_string(ref::prefillChunkRows(c.batchSize, c.seqLen)) + ")";
        }
    }
    return "";
}

bool fullReferenceAffordable(ref::PrefillCase const& c) {
    int64_t const pairs = int64_t(c.batchSize) * c.seqLen * ((c.seqLen + 3) / 4);
    return pairs <= (implOnGpu() ? (int64_t(1) << 22) : (int64_t(1) << 21));
}

} // namespace prop
} // namespace qsa

// Shared machinery of the property tests (see prop.h).
#include "properties/prop.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "fixtures/fixture.h"

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

int32_t decodeRow(int64_t r, int32_t S, int32_t* b) {
    *b = int32_t(r / S);
    return int32_t(r % S);
}

} // namespace

int maxSuccess(int fallback) {
    char const* env = std::getenv("RC_PARAMS");
    if (env != nullptr && std::string(env).find("max_success") != std::string::npos) {
        return rc::detail::configuration().testParams.maxSuccess;
    }
    return fallback;
}

void checkProperty(std::string const& id, int defaultCases, rc::detail::Property const& property) {
    rc::detail::TestMetadata metadata;
    metadata.id = id;
    metadata.description = id;
    rc::detail::TestParams params = rc::detail::configuration().testParams;
    params.maxSuccess = maxSuccess(defaultCases);
    pending().reset();
    auto const result = rc::detail::checkProperty(property, metadata, params);
    if (result.template is<rc::detail::SuccessResult>()) {
        pending().reset();
        return;
    }
    std::ostringstream ss;
    rc::detail::printResultMessage(result, ss);
    writePending(id);
    ADD_FAILURE() << ss.str();
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
    size_t first = got.size(), count = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] != want[i]) {
            if (first == got.size())
                first = i;
            ++count;
        }
    }
    if (count == 0)
        return "";
    int32_t b;
    int32_t const t = decodeRow(int64_t(first / ref::kIndexWidth), S, &b);
    os << what << ": " << count << " outIdx entries differ; first at row b=" << b << " t=" << t << " col "
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
    size_t count = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] != want[i] && count++ == 0)
            first = i;
    }
    if (count == 0)
        return "";
    size_t const col = first % d.poolHeadDim, head = first / d.poolHeadDim % d.numKVHeads;
    size_t const row = first / (size_t(d.poolHeadDim) * d.numKVHeads) % 128;
    size_t const page = first / (size_t(d.poolHeadDim) * d.numKVHeads * 128);
    os << what << ": " << count << " pool elements differ; first at page " << page
       << (page >= size_t(d.numPages) ? " (V plane)" : " (K plane)") << " row " << row << " head " << head << " col "
       << col << ": got 0x" << std::hex << got[first] << ", expected 0x" << want[first] << std::dec;
    return os.str();
}

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
        int32_t const ctx = std::min(std::max(c.contextLengths[b], 0), c.seqLen);
        for (int64_t t : {0, 1, 2, 3, 4, 2046, 2047, 2048, 2050, 2051})
            add(base + std::min<int64_t>(t, c.seqLen - 1));
        for (int64_t d = -5; d <= 1; ++d)
            add(base + ctx + d);
        add(base + c.seqLen - 1);
    }
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < randomRows; ++i)
        add(int64_t(rng() % uint64_t(rows)));
    return {s.begin(), s.end()};
}

bool fullReferenceAffordable(ref::PrefillCase const& c) {
    int64_t const pairs = int64_t(c.batchSize) * c.seqLen * ((c.seqLen + 3) / 4);
    return pairs <= (implOnGpu() ? (int64_t(1) << 22) : (int64_t(1) << 21));
}

} // namespace prop
} // namespace qsa

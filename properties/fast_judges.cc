// Profile `fast` judges (fast_judges.h; contract section 9.2).
#include "properties/fast_judges.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "reference/numerics.h"
#include "reference/rowops.h"

namespace qsa {
namespace prop {
namespace fast {

using ref::fast::LogitBound;
using ref::fast::RowBounds;

double parseEpsR(std::string const& s, std::string const& what) {
    double v = 0;
    size_t used = 0;
    try {
        if (s.rfind("2^", 0) == 0) {
            int const e = std::stoi(s.substr(2), &used);
            used += 2;
            v = std::ldexp(1.0, e);
        } else {
            v = std::stod(s, &used);
        }
    } catch (std::exception const&) {
        used = 0;
    }
    // F3's eps_r is a relative error: positive and below 1 (section 9, F3).
    if (used == 0 || used != s.size() || !(v > 0 && v < 1))
        throw std::runtime_error(what + " must be a positive relative error below 1 (e.g. 2^-21), got '" + s + "'");
    return v;
}

namespace {
std::optional<ref::fast::Params>& paramsOverride() {
    static std::optional<ref::fast::Params> p;
    return p;
}
} // namespace

void setParams(std::optional<ref::fast::Params> p) {
    paramsOverride() = p;
}

ref::fast::Params params() {
    if (paramsOverride())
        return *paramsOverride();
    ref::fast::Params p;
    if (char const* e = std::getenv("QSA_FAST_EPS_R"))
        p.epsR = parseEpsR(e, "QSA_FAST_EPS_R");
    return p;
}

Tally& tally() {
    static Tally t;
    return t;
}

void start() {
    tally() = Tally{};
}

std::string tallyLine(std::string const& id) {
    Tally const& t = tally();
    return "QSA_FAST " + id + " judged_elements=" + std::to_string(t.judgedElements) +
           " unjudged_elements=" + std::to_string(t.unjudgedElements) + " judged_rows=" + std::to_string(t.judgedRows) +
           " ambiguous_rows=" + std::to_string(t.ambiguousRows) + " eps_r=" + ref::fast::describeEpsR(params().epsR);
}

namespace {

std::string hexT(uint16_t v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0x%04x", v);
    return buf;
}

std::string interval(float lo, float hi) {
    char buf[80];
    std::snprintf(buf, sizeof(buf), "[%.9g, %.9g]", lo, hi);
    return buf;
}

std::string epsTag() {
    return " (profile fast, eps_r " + ref::fast::describeEpsR(params().epsR) + ")";
}

// E1 on one 128-element T row: "" or the first element outside its interval.
std::string judgeRow(ref::DType dt, RowBounds const& b, uint16_t const* got, std::string const& where) {
    Tally& t = tally();
    ++t.judgedRows;
    for (int d = 0; d < 128; ++d) {
        if (!b.judged[d]) {
            ++t.unjudgedElements;
            continue;
        }
        ++t.judgedElements;
        if (!ref::fast::tInside(dt, got[d], b.lo[d], b.hi[d]))
            return where + " element " + std::to_string(d) + ": got " + hexT(got[d]) + " (" +
                   std::to_string(ref::toFloat(dt, got[d])) + "), outside its interval " + interval(b.lo[d], b.hi[d]) +
                   " (FP32 result in " + interval(b.fLo[d], b.fHi[d]) + ")" + epsTag();
    }
    return "";
}

std::string judgeZeros(uint16_t const* got, size_t n, std::string const& where) {
    for (size_t i = 0; i < n; ++i)
        if (got[i] != 0)
            return where + " element " + std::to_string(i) + ": got " + hexT(got[i]) +
                   ", expected an exact zero 0x0000 (section 9.1: still exact)";
    return "";
}

// K4 of a row from its emitted blocks (section 4), compared exactly with the row (E5).
std::string judgeLayout(int32_t const* row, std::vector<int32_t> const& sel, int32_t nVis, int32_t tail,
                        std::string const& where) {
    std::vector<int32_t> want(ref::kIndexWidth);
    ref::expandRow(want.data(), sel.data(), int32_t(sel.size()), nVis, tail);
    for (int32_t i = 0; i < ref::kIndexWidth; ++i)
        if (row[i] != want[i])
            return where + ": outIdx[" + std::to_string(i) + "] = " + std::to_string(row[i]) + ", K4 of its own " +
                   std::to_string(sel.size()) + " emitted blocks (nVis " + std::to_string(nVis) + ", tail " +
                   std::to_string(tail) + ") gives " + std::to_string(want[i]);
    return "";
}

std::string judgeAllMinusOne(int32_t const* row, std::string const& where) {
    for (int32_t i = 0; i < ref::kIndexWidth; ++i)
        if (row[i] != -1)
            return where + ": outIdx[" + std::to_string(i) + "] = " + std::to_string(row[i]) + ", expected -1";
    return "";
}

// One V-tail or K-tail cell of 128 elements at the tail of (page, row); nullptr when the entry is unusable.
uint16_t const* tailAt(ref::HostPool const& layout, std::vector<uint16_t> const& data, int32_t b, int plane,
                       int32_t token) {
    int64_t const e = usableTail(layout, b, plane, token);
    return e < 0 ? nullptr : &data[size_t(e)];
}

// The E1 bounds of kbar block g of sequence b, from its raw k rows (prefill input).
RowBounds prefillKbarBounds(ref::PrefillCase const& c, int32_t b, int32_t g) {
    uint16_t const* k[4];
    for (int j = 0; j < 4; ++j)
        k[j] = &c.indexQk[(size_t(b) * c.seqLen + 4 * g + j) * ref::kQkWidth + 512];
    return ref::fast::kbarBounds(c.dtype, k, c.wK.data(), &c.cosSin[size_t(4) * g * 64], c.rmsEps, params());
}

} // namespace

RowBounds prefillQBounds(ref::PrefillCase const& c, int32_t b, int32_t t, int h) {
    size_t const row = size_t(b) * c.seqLen + t;
    return ref::fast::qBounds(c.dtype, &c.indexQk[row * ref::kQkWidth + 128 * h], c.wQ.data(),
                              &c.cosSin[size_t(t) * 64], c.rmsEps, params());
}

RowBounds decodeQBounds(ref::DecodeCase const& d, int32_t b, int h) {
    return ref::fast::qBounds(d.dtype, &d.indexQk[size_t(b) * ref::kQkWidth + 128 * h], d.wQ.data(),
                              &d.cosSin[size_t(d.contextLengths[b] - 1) * 64], d.rmsEps, params());
}

namespace {

// E1 on one qNormed row of 4 heads: +0.0 throughout when the row is not `valid` (`invalid` names such a row),
// else head h inside bounds(h).
std::string judgeQRow(ref::DType dt, uint16_t const* q, bool valid, char const* invalid,
                      std::function<RowBounds(int)> const& bounds, std::string const& where) {
    if (!valid)
        return judgeZeros(q, 512, where + " [" + invalid + "]");
    for (int h = 0; h < 4; ++h) {
        std::string const m = judgeRow(dt, bounds(h), q + 128 * h, where + " head " + std::to_string(h));
        if (!m.empty())
            return m;
    }
    return "";
}

} // namespace

std::string judgePrefillQ(ref::PrefillCase const& c, PrefillOut const& got) {
    int32_t const S = c.seqLen;
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = ref::caseCtx(c, b);
        for (int32_t t = 0; t < S; ++t) {
            size_t const row = size_t(b) * S + t;
            uint16_t const* q = &got.qNormed[row * 512];
            std::string const where = "K1a qNormed (workspace slot, section 6) b=" + std::to_string(b) +
                                      " t=" + std::to_string(t) + " (ctx " + std::to_string(ctx) + ")";
            std::string const m = judgeQRow(
                c.dtype, q, t < ctx, "padded row", [&](int h) { return prefillQBounds(c, b, t, h); }, where);
            if (!m.empty())
                return m;
        }
    }
    return "";
}

std::string judgePrefillKbar(ref::PrefillCase const& c, PrefillOut const& got) {
    int32_t const MB = (c.seqLen + 3) / 4;
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = ref::caseCtx(c, b);
        for (int32_t g = 0; g < MB; ++g) {
            uint16_t const* k = &got.kbar[(size_t(b) * MB + g) * 128];
            std::string const where = "K1b kbar (workspace slot, section 6) b=" + std::to_string(b) +
                                      " block g=" + std::to_string(g) + " (ctx " + std::to_string(ctx) + ")";
            std::string const m = 4 * g + 3 < ctx ? judgeRow(c.dtype, prefillKbarBounds(c, b, g), k, where)
                                                  : judgeZeros(k, 128, where + " [invalid block]");
            if (!m.empty())
                return m;
        }
    }
    return "";
}

std::string judgePrefillStages(ref::PrefillCase const& c, PrefillOut const& got) {
    std::string const m = judgePrefillQ(c, got);
    return m.empty() ? judgePrefillKbar(c, got) : m;
}

std::string judgePrefillKbarCell(ref::PrefillCase const& c, int32_t b, int32_t g, uint16_t const* cell,
                                 std::string const& where) {
    return judgeRow(c.dtype, prefillKbarBounds(c, b, g), cell, where);
}

std::vector<LogitBound> prefillRowBounds(ref::PrefillCase const& c, PrefillOut const& got, int32_t b, int32_t t) {
    int32_t const MB = (c.seqLen + 3) / 4, nVis = (t + 1) / 4;
    ref::fast::KbarRows const rows(c.dtype, &got.kbar[size_t(b) * MB * 128], nVis);
    return rows.bounds(&got.qNormed[(size_t(b) * c.seqLen + t) * 512], nVis, params());
}

std::string judgePrefillRows(ref::PrefillCase const& c, PrefillOut const& got, std::vector<int64_t> const& rows) {
    int32_t const S = c.seqLen, MB = (S + 3) / 4;
    Tally& tl = tally();
    // E5 first, row by row; the rows to judge by E3 are then bounded in batches of one sequence (GEMMs).
    struct Pending {
        int64_t r;
        std::vector<int32_t> sel;
    };
    std::vector<Pending> pending;
    auto flush = [&]() -> std::string {
        if (pending.empty())
            return "";
        int32_t const b = int32_t(pending[0].r / S);
        ref::fast::KbarRows const kb(c.dtype, &got.kbar[size_t(b) * MB * 128], MB);
        std::vector<uint16_t const*> qs;
        std::vector<int32_t> nv;
        for (Pending const& p : pending) {
            qs.push_back(&got.qNormed[size_t(p.r) * 512]);
            nv.push_back(int32_t(p.r % S + 1) / 4);
        }
        std::vector<std::vector<LogitBound>> const all = kb.boundsRows(qs, nv, params());
        for (size_t i = 0; i < pending.size(); ++i) {
            std::vector<LogitBound> const& bounds = all[i];
            for (LogitBound const& lb : bounds)
                (lb.ok ? tl.judgedElements : tl.unjudgedElements) += 1;
            ++tl.judgedRows;
            if (nv[i] > ref::kBlockTopK && ref::fast::selectionAmbiguous(bounds, pending[i].sel))
                ++tl.ambiguousRows;
            std::string const m = ref::fast::judgeSelection(bounds, pending[i].sel, true);
            if (!m.empty())
                return "prefill row b=" + std::to_string(b) + " t=" + std::to_string(pending[i].r % S) +
                       ", E3 (selection on logit intervals from the implementation's own qNormed and kbar slots): " +
                       m + epsTag();
        }
        pending.clear();
        return "";
    };
    for (int64_t r : rows) {
        int32_t const b = int32_t(r / S), t = int32_t(r % S);
        if (!pending.empty() && (pending[0].r / S != b || pending.size() >= 256)) {
            std::string const m = flush();
            if (!m.empty())
                return m;
        }
        int32_t const ctx = ref::caseCtx(c, b);
        int32_t const* row = &got.outIdx[size_t(r) * ref::kIndexWidth];
        std::string const where =
            "prefill row b=" + std::to_string(b) + " t=" + std::to_string(t) + " (ctx " + std::to_string(ctx) + ")";
        if (t >= ctx) {
            std::string const m = judgeAllMinusOne(row, where + " [padded row]");
            if (!m.empty())
                return m;
            continue;
        }
        int32_t const nVis = (t + 1) / 4, kSel = std::min(ref::kBlockTopK, nVis);
        std::vector<int32_t> sel;
        for (int32_t i = 0; i < kSel; ++i) {
            int32_t const v = row[4 * i];
            if (v < 0 || v % 4 != 0 || v / 4 >= nVis)
                return where + ": outIdx[" + std::to_string(4 * i) + "] = " + std::to_string(v) +
                       " is not the first token of a visible block (nVis " + std::to_string(nVis) + ")";
            sel.push_back(v / 4);
        }
        std::string const m = judgeLayout(row, sel, nVis, (t + 1) % 4, where);
        if (!m.empty())
            return m;
        pending.push_back({r, std::move(sel)});
    }
    return flush();
}

std::string judgePrefillPool(ref::PrefillCase const& c, PrefillOut const& got) {
    std::string m = checkCellPlan(prefillCellPlan(c), c.pool.data, got.pool, c.pool.dims, c.dtype);
    if (!m.empty())
        return "prefill pool: " + m;
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = ref::caseCtx(c, b);
        for (int32_t g = 0; 4 * g + 3 < ctx; ++g) {
            uint16_t const* cell = tailAt(c.pool, got.pool, b, 1, 4 * g);
            if (!cell)
                continue;
            m = judgeRow(c.dtype, prefillKbarBounds(c, b, g), cell,
                         "prefill pool V-tail (kbar) of block g=" + std::to_string(g) +
                             " sequence b=" + std::to_string(b));
            if (!m.empty())
                return m;
        }
    }
    return "";
}

std::string judgeDecodeQ(ref::DecodeCase const& d, DecodeOut const& got) {
    for (int32_t b = 0; b < d.batchSize; ++b) {
        int32_t const ctx = d.contextLengths[b];
        std::string const where =
            "B1 qNormed (workspace slot, section 6) b=" + std::to_string(b) + " (ctx " + std::to_string(ctx) + ")";
        uint16_t const* q = &got.qNormed[size_t(b) * 512];
        std::string const m = judgeQRow(
            d.dtype, q, ref::decodeRowValid(ctx, d.maxBlocks), "invalid row",
            [&](int h) { return decodeQBounds(d, b, h); }, where);
        if (!m.empty())
            return m;
    }
    return "";
}

namespace {

// kbar rows g < n of sequence b read from the V-tails of `data` (+0.0 where the entry is unusable).
std::vector<uint16_t> vTails(ref::DecodeCase const& d, std::vector<uint16_t> const& data, int32_t b, int32_t n) {
    std::vector<uint16_t> k(size_t(n) * 128, 0);
    for (int32_t g = 0; g < n; ++g)
        if (uint16_t const* cell = tailAt(d.pool, data, b, 1, 4 * g))
            std::copy(cell, cell + 128, k.begin() + size_t(g) * 128);
    return k;
}

// A float's bits and value: "0x........ (v)".
std::string floatShown(float v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "0x%08x (%.9g)", ref::floatBits(v), v);
    return buf;
}

// E2 on one visible logit v, counted as judged (or unjudged: an interval that is not finite): "" when it lies in
// its interval, else "got <v>, outside its interval [lo, hi] from <inputs> (E2)<eps>". NaN and -0.0 fail (section
// 9.1: relu gives +0.0).
std::string judgeLogit(float v, LogitBound const& lb, char const* inputs) {
    (lb.ok ? tally().judgedElements : tally().unjudgedElements) += 1;
    if (!(std::isnan(v) || ref::floatBits(v) == 0x80000000u || v < lb.lo || v > lb.hi))
        return "";
    return "got " + floatShown(v) + ", outside its interval " + interval(lb.lo, lb.hi) + " from " + inputs + " (E2)" +
           epsTag();
}

} // namespace

std::string judgeDecodeLogits(ref::DecodeCase const& d, DecodeOut const& got) {
    Tally& tl = tally();
    for (int32_t b = 0; b < d.batchSize; ++b) {
        int32_t const ctx = d.contextLengths[b];
        if (!ref::decodeRowValid(ctx, d.maxBlocks))
            continue;
        int32_t const nVis = ctx / 4;
        std::vector<uint16_t> const k = vTails(d, got.pool, b, nVis);
        std::vector<LogitBound> const bounds =
            ref::fast::logitBounds(d.dtype, &got.qNormed[size_t(b) * 512], k.data(), nVis, params());
        ++tl.judgedRows;
        for (int32_t g = 0; g < nVis; ++g) {
            std::string const m = judgeLogit(got.logits[size_t(b) * d.maxBlocks + g], bounds[g],
                                             "the implementation's own qNormed and V-tail kbar");
            if (!m.empty())
                return "B2 logits (workspace slot, section 6) b=" + std::to_string(b) + " (ctx " + std::to_string(ctx) +
                       ") block g=" + std::to_string(g) + ": " + m;
        }
    }
    return "";
}

std::string judgePrefillLogits(ref::PrefillCase const& c, PrefillOut const& got, std::vector<float> const& logits,
                               int64_t r0, int64_t r1) {
    int32_t const S = c.seqLen, MB = (S + 3) / 4;
    Tally& tl = tally();
    // Batches of at most 256 rows of one sequence: one GEMM per head for their bounds.
    for (int64_t lo = r0; lo < r1;) {
        int32_t const b = int32_t(lo / S), ctx = ref::caseCtx(c, b);
        int64_t const hi = std::min({r1, int64_t(b + 1) * S, lo + 256});
        ref::fast::KbarRows const kb(c.dtype, &got.kbar[size_t(b) * MB * 128], MB);
        std::vector<uint16_t const*> qs;
        std::vector<int32_t> nv;
        for (int64_t r = lo; r < hi; ++r) {
            int32_t const t = int32_t(r % S);
            qs.push_back(&got.qNormed[size_t(r) * 512]);
            nv.push_back(t < ctx ? (t + 1) / 4 : 0); // padded rows: no visible entry
        }
        std::vector<std::vector<LogitBound>> const all = kb.boundsRows(qs, nv, params());
        for (int64_t r = lo; r < hi; ++r) {
            size_t const i = size_t(r - lo);
            int32_t const t = int32_t(r % S);
            float const* row = &logits[size_t(r - r0) * MB];
            tl.judgedRows += nv[i] > 0;
            for (int32_t g = 0; g < MB; ++g) {
                // The element, named only for a failure (this loop meets millions of elements).
                auto where = [&]() {
                    return "K2 logits (stage launcher) b=" + std::to_string(b) + " t=" + std::to_string(t) + " (ctx " +
                           std::to_string(ctx) + ", nVis " + std::to_string(nv[i]) + ") block g=" + std::to_string(g) +
                           ": ";
                };
                if (g >= nv[i]) {
                    if (ref::floatBits(row[g]) != 0xFF7FFFFFu)
                        return where() + "got " + floatShown(row[g]) +
                               ", an invisible entry must be -FLT_MAX (0xff7fffff) (E5)";
                    continue;
                }
                std::string const m = judgeLogit(row[g], all[i][size_t(g)], "the launchers' own qNormed and kbar");
                if (!m.empty())
                    return where() + m;
            }
        }
        lo = hi;
    }
    return "";
}

std::vector<LogitBound> decodeRowBounds(ref::DecodeCase const& d, std::vector<uint16_t> const& qNormed,
                                        std::vector<uint16_t> const& pool, int32_t b) {
    int32_t const nVis = d.contextLengths[b] / 4;
    std::vector<uint16_t> const k = vTails(d, pool, b, nVis);
    return ref::fast::logitBounds(d.dtype, &qNormed[size_t(b) * 512], k.data(), nVis, params());
}

std::string judgeDecodePool(ref::DecodeCase const& d, DecodeOut const& got, bool hardened) {
    std::string m = checkCellPlan(decodeCellPlan(d, hardened), d.pool.data, got.pool, d.pool.dims, d.dtype);
    if (!m.empty())
        return "decode pool: " + m;
    if (d.hasSplitCounters && got.splitCounters != std::vector<int32_t>(d.splitCounters.size(), 0))
        return "split counters rows b < B were not all zeroed (section 5 B3; exact under fast)";
    for (int32_t b = 0; b < d.batchSize; ++b) {
        int32_t const ctx = d.contextLengths[b];
        int32_t const* row = &got.outIdx[size_t(b) * ref::kIndexWidth];
        std::string const where = "decode row b=" + std::to_string(b) + " (ctx " + std::to_string(ctx) + ")";
        if (!ref::decodeRowValid(ctx, d.maxBlocks)) {
            m = judgeAllMinusOne(row, where + " [invalid row]");
            if (!m.empty())
                return m;
            continue;
        }
        // The completed block's kbar in its V-tail (E1), from the K-tails the step read and its own raw k.
        if (ctx % 4 == 0) {
            int32_t const g = ctx / 4 - 1;
            static uint16_t const zeros[128] = {};
            uint16_t const* k[4];
            bool kHole = false;
            for (int j = 0; j < 3; ++j) {
                uint16_t const* cell = tailAt(d.pool, d.pool.data, b, 0, 4 * g + j);
                kHole |= cell == nullptr;
                k[j] = cell ? cell : zeros; // an unusable entry reads +0.0 (section 3; a hardened guarantee)
            }
            k[3] = &d.indexQk[size_t(b) * ref::kQkWidth + 512];
            uint16_t const* cell = tailAt(d.pool, got.pool, b, 1, 4 * g);
            if (cell && (hardened || !kHole)) {
                m = judgeRow(
                    d.dtype,
                    ref::fast::kbarBounds(d.dtype, k, d.wK.data(), &d.cosSin[size_t(4) * g * 64], d.rmsEps, params()),
                    cell, "B1 kbar of the completed block g=" + std::to_string(g) + " (V-tail) b=" + std::to_string(b));
                if (!m.empty())
                    return m;
            }
        }
    }
    return "";
}

std::string judgeDecodeSelection(ref::DecodeCase const& d, DecodeOut const& got) {
    Tally& tl = tally();
    for (int32_t b = 0; b < d.batchSize; ++b) {
        int32_t const ctx = d.contextLengths[b];
        if (!ref::decodeRowValid(ctx, d.maxBlocks))
            continue; // judgeDecodePool: all -1
        int32_t const* row = &got.outIdx[size_t(b) * ref::kIndexWidth];
        std::string const where = "decode row b=" + std::to_string(b) + " (ctx " + std::to_string(ctx) + ")";
        // E4: the contract's selection of the implementation's own logits, exactly; then K4 (E5).
        int32_t const nVis = ctx / 4;
        std::vector<int32_t> sel(std::min(ref::kBlockTopK, nVis));
        int32_t const kSel = ref::selectDecodeRow(&got.logits[size_t(b) * d.maxBlocks], nVis, sel.data());
        sel.resize(kSel);
        std::string const m =
            judgeLayout(row, sel, nVis, ctx % 4,
                        where + ", E4 (the contract's selection of the implementation's own logits, read back)");
        if (!m.empty())
            return m;
        if (nVis > ref::kBlockTopK && ref::fast::selectionAmbiguous(decodeRowBounds(d, got.qNormed, got.pool, b), sel))
            ++tl.ambiguousRows;
    }
    return "";
}

std::string judgeDecodeStep(ref::DecodeCase const& d, DecodeOut const& got, bool hardened) {
    std::string m = judgeDecodeQ(d, got);
    if (m.empty())
        m = judgeDecodeLogits(d, got);
    if (m.empty())
        m = judgeDecodePool(d, got, hardened);
    if (m.empty())
        m = judgeDecodeSelection(d, got);
    return m;
}

} // namespace fast
} // namespace prop
} // namespace qsa

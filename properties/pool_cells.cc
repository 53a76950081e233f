// Pool cells and canaries (see pool_cells.h).
#include "properties/pool_cells.h"

#include <algorithm>
#include <sstream>

#include "reference/rowops.h"
#include "testing/rng.h"

namespace qsa {
namespace prop {
int32_t usablePage(ref::HostPool const& p, int32_t b, int plane, int32_t token) {
    int32_t const slot = token >> 7;
    if (slot >= p.dims.maxPagesPerSeq)
        return -1;
    int32_t const id = p.pageTable[(size_t(b) * 2 + plane) * p.dims.maxPagesPerSeq + slot];
    int32_t const lo = plane == 0 ? 0 : p.dims.numPages;
    return id >= lo && id < lo + p.dims.numPages ? id : -1;
}

int64_t usableTail(ref::HostPool const& p, int32_t b, int plane, int32_t token) {
    int32_t const page = usablePage(p, b, plane, token);
    return page < 0 ? -1
                    : (int64_t(page) * 128 + (token & 127)) * p.dims.numKVHeads * p.dims.poolHeadDim + p.dims.headSize;
}

namespace {

// The tail cells of `token` in `plane` when its entry is usable: `rule`, and for kRawK the bits of rawK.
void mark(CellPlan& plan, ref::HostPool const& p, int32_t b, int plane, int32_t token, CellRule rule,
          uint16_t const* rawK = nullptr) {
    int64_t const e = usableTail(p, b, plane, token);
    for (int i = 0; e >= 0 && i < 128; ++i) {
        plan.rule[e + i] = rule;
        if (rawK != nullptr)
            plan.rawK[e + i] = rawK[i];
    }
}

} // namespace

CellPlan prefillCellPlan(ref::PrefillCase const& c) {
    CellPlan plan(c.pool.data.size());
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = ref::caseCtx(c, b);
        for (int32_t g = 0; 4 * g + 3 < ctx; ++g)
            mark(plan, c.pool, b, 1, 4 * g, CellRule::kWritten);
        for (int32_t t = ctx - ctx % 4; t < ctx; ++t) {
            mark(plan, c.pool, b, 0, t, CellRule::kRawK, &c.indexQk[(size_t(b) * c.seqLen + t) * 640 + 512]);
        }
    }
    return plan;
}

CellPlan decodeCellPlan(ref::DecodeCase const& c, bool hardened) {
    CellPlan plan(c.pool.data.size());
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = c.contextLengths[b];
        if (!ref::decodeRowValid(ctx, c.maxBlocks))
            continue; // invalid row (contract section 5, the floor rule): no pool cell
        if (ctx % 4 != 0) {
            mark(plan, c.pool, b, 0, ctx - 1, CellRule::kRawK, &c.indexQk[size_t(b) * 640 + 512]);
        } else {
            // Tokens 4g..4g+2 share one K page (a block never straddles a page).
            int32_t const g = ctx / 4 - 1;
            bool const readsHole = usablePage(c.pool, b, 0, 4 * g) < 0;
            mark(plan, c.pool, b, 1, 4 * g, readsHole && !hardened ? CellRule::kMayWrite : CellRule::kWritten);
        }
    }
    return plan;
}

bool completesBlockOverKHole(ref::DecodeCase const& c) {
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = c.contextLengths[b];
        if (ref::decodeRowValid(ctx, c.maxBlocks) && ctx % 4 == 0 && usablePage(c.pool, b, 0, ctx - 4) < 0 &&
            usablePage(c.pool, b, 1, ctx - 4) >= 0)
            return true;
    }
    return false;
}

std::string checkCellPlan(CellPlan const& plan, std::vector<uint16_t> const& before, std::vector<uint16_t> const& after,
                          ref::PoolDims const& d, ref::DType dt) {
    auto where = [&](size_t e) {
        std::ostringstream os;
        os << poolCell(d, e) << std::hex << ": before 0x" << before[e] << " after 0x" << after[e];
        return os.str();
    };
    if (after.size() != before.size())
        return "pool size changed";
    for (size_t e = 0; e < after.size(); ++e) {
        switch (plan.rule[e]) {
        case CellRule::kUnchanged:
            if (after[e] != before[e])
                return "a cell outside the contract's cells changed at " + where(e);
            break;
        case CellRule::kRawK:
            if (after[e] != plan.rawK[e]) {
                std::ostringstream os;
                os << "K-tail cell does not hold the raw k bits 0x" << std::hex << plan.rawK[e] << " at " << where(e);
                return os.str();
            }
            break;
        case CellRule::kWritten:
            if (before[e] == canary(dt, e) && after[e] == before[e]) {
                return "V-tail cell of a valid block was not written at " + where(e);
            }
            break;
        case CellRule::kMayWrite:
            break;
        }
    }
    return "";
}

std::string poolCell(ref::PoolDims const& d, size_t e) {
    size_t const col = e % d.poolHeadDim, head = e / d.poolHeadDim % d.numKVHeads;
    size_t const row = e / (size_t(d.poolHeadDim) * d.numKVHeads) % 128;
    size_t const page = e / (size_t(d.poolHeadDim) * d.numKVHeads * 128);
    return "page " + std::to_string(page) + (page >= size_t(d.numPages) ? " (V plane)" : " (K plane)") + " row " +
           std::to_string(row) + " head " + std::to_string(head) + " col " + std::to_string(col);
}

uint16_t canary(ref::DType dt, size_t element) {
    uint64_t const h = testlib::mix(element * 0x2545F4914F6CDD1Dull);
    uint16_t const sign = (h >> 33) & 1 ? 0x8000 : 0;
    return dt == ref::DType::kHalf ? uint16_t(sign | (0x7C01 + h % 0x300)) : uint16_t(sign | (0x7F81 + h % 0x70));
}

} // namespace prop
} // namespace qsa

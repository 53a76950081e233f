// Regions of generated cases (see regions.h).
#include "properties/regions.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "properties/harness.h"
#include "properties/pool_cells.h"
#include "reference/numerics.h"
#include "reference/rowops.h"

namespace qsa {
namespace prop {
namespace {

using ref::DType;

bool nonFinite(DType dt, uint16_t v) {
    uint16_t const e = dt == DType::kHalf ? 0x7C00 : 0x7F80;
    return (v & e) == e;
}

bool hugeBits(DType dt, uint16_t v) {
    return (v & 0x7FFF) >= (dt == DType::kHalf ? 0x7400 : 0x5B80); // 2^14 / 2^56 and up
}

// NaN / Inf and huge values among n T elements.
void scanPayload(DType dt, uint16_t const* v, size_t n, bool* nonFiniteSeen, bool* hugeSeen) {
    for (size_t i = 0; i < n; ++i) {
        *nonFiniteSeen |= nonFinite(dt, v[i]);
        *hugeSeen |= hugeBits(dt, v[i]);
    }
}

// 0 < s / 128 < 2^-126 for some head of the q part of a 640-column row.
bool tinyRow(DType dt, uint16_t const* row) {
    for (int h = 0; h < 4; ++h) {
        double s = 0;
        for (int d = 0; d < 128; ++d) {
            double const x = ref::toFloat(dt, row[128 * h + d]);
            s += x * x;
        }
        if (s > 0 && s / 128 < std::ldexp(1.0, -126))
            return true;
    }
    return false;
}

// Classifies one page-table slot a run would use into r's holeUsed, outOfPlaneUsed or truncatedHit.
template <typename Regions>
void slotUse(ref::HostPool const& p, int32_t b, int plane, int32_t slot, Regions& r) {
    if (slot >= p.dims.maxPagesPerSeq) {
        r.truncatedHit = true;
        return;
    }
    int32_t const id = p.pageTable[(size_t(b) * 2 + plane) * p.dims.maxPagesPerSeq + slot];
    int32_t const lo = plane == 0 ? 0 : p.dims.numPages;
    if (id == -1)
        r.holeUsed = true;
    else if (id < lo || id >= lo + p.dims.numPages)
        r.outOfPlaneUsed = true;
}

} // namespace

PrefillRegions prefillRegions(ref::PrefillCase const& c) {
    PrefillRegions r;
    int32_t const B = c.batchSize, S = c.seqLen;
    r.bf16 = c.dtype == DType::kBf16;
    int64_t const rows = int64_t(B) * S, rc = ref::prefillChunkRows(B, S);
    r.chunked = rc < rows;
    for (int64_t k = rc; k < rows; k += rc) {
        int32_t const b = int32_t(k / S), t = int32_t(k % S), ctx = ref::caseCtx(c, b);
        r.chunkAtSeqStart |= t == 0;
        r.chunkAtLastValid |= t == ctx - 1;
        r.chunkInPadding |= t >= ctx;
        r.chunkAtBlockEdge |= t > 0 && t < ctx && t % 4 == 0;
    }
    for (int32_t b = 0; b < B; ++b) {
        int32_t const ctx = ref::caseCtx(c, b);
        r.nVisGt512 |= ctx / 4 > 512;
        r.pageCrossed |= ctx > 128;
        for (int32_t t = 0; t < S; ++t) {
            uint16_t const* row = &c.indexQk[(size_t(b) * S + t) * 640];
            bool nf = false, hg = false;
            scanPayload(c.dtype, row, 640, &nf, &hg);
            if (t < ctx) {
                r.nonFiniteValid |= nf;
                r.huge |= hg;
                if (!r.tinySubnormalSum && t < 8)
                    r.tinySubnormalSum = tinyRow(c.dtype, row);
            } else {
                r.nonFinitePadding |= nf;
            }
        }
        if (!c.hasPool)
            continue;
        // V plane: the slots of complete blocks; K plane: the slot of the trailing tokens (section 3, 5).
        if (ctx >= 4) {
            for (int32_t s = 0; s <= (4 * (ctx / 4 - 1)) >> 7; ++s)
                slotUse(c.pool, b, 1, s, r);
        }
        if (ctx % 4 != 0)
            slotUse(c.pool, b, 0, (ctx - 1) >> 7, r);
    }
    return r;
}

namespace {

// The kbar of the V-tails that B2 of row b reads (blocks g < ctx / 4 whose page entry is in its plane).
void scanVTails(ref::DecodeCase const& d, int32_t b, int32_t ctx, bool* nonFiniteSeen, bool* hugeSeen) {
    for (int32_t g = 0; g < ctx / 4; ++g) {
        int64_t const at = usableTail(d.pool, b, 1, 4 * g); // -1: a hole or out of plane, never read
        if (at >= 0 && size_t(at) + 128 <= d.pool.data.size())
            scanPayload(d.dtype, &d.pool.data[size_t(at)], 128, nonFiniteSeen, hugeSeen);
    }
}

} // namespace

DecodeRegions decodeRegions(std::vector<ref::DecodeCase> const& steps) {
    DecodeRegions r;
    for (size_t step = 0; step < steps.size(); ++step) {
        ref::DecodeCase const& d = steps[step];
        r.bf16 |= d.dtype == DType::kBf16;
        for (int32_t b = 0; b < d.batchSize; ++b) {
            int32_t const ctx = d.contextLengths[b];
            uint16_t const* row = &d.indexQk[size_t(b) * 640];
            if (ctx < 1 || ctx / 4 > d.maxBlocks) {
                bool unusedHuge = false;
                scanPayload(d.dtype, row, 640, &r.nonFiniteInvalid, &unusedHuge);
                r.invalidRow = true;
                continue; // invalid row: touches nothing
            }
            r.validAtFloorEdge |= ctx / 4 == d.maxBlocks && ctx % 4 != 0;
            scanPayload(d.dtype, row, 640, &r.nonFiniteValid, &r.huge);
            if (step == 0)
                scanVTails(d, b, ctx, &r.nonFiniteValid, &r.huge);
            int32_t const t = ctx - 1;
            r.nVisGt512 |= ctx / 4 > 512;
            r.blockCompletes |= ctx % 4 == 0;
            r.pageEdge |= t % 128 == 0 || t % 128 == 127;
            if (ctx % 4 != 0) {
                slotUse(d.pool, b, 0, t >> 7, r); // B1 stores the new raw k
            } else {
                slotUse(d.pool, b, 0, (ctx - 4) >> 7, r); // B1 reads K-tails 4g..4g+2
                slotUse(d.pool, b, 1, (ctx - 4) >> 7, r); // and writes the V-tail
            }
            for (int32_t s = 0; ctx >= 4 && s <= (4 * (ctx / 4 - 1)) >> 7; ++s)
                slotUse(d.pool, b, 1, s, r); // B2 reads every V-tail g < ctx/4
        }
    }
    return r;
}

bool tiesAtRank(float const* logits, int32_t n, int32_t maxRank) {
    if (n <= maxRank + 1)
        return false;
    std::vector<float> v(logits, logits + n);
    std::partial_sort(v.begin(), v.begin() + maxRank + 2, v.end(), std::greater<float>());
    return v[size_t(maxRank)] == v[size_t(maxRank) + 1];
}

double nVisFloor() {
    return implOnGpu() ? 0.20 : 0.10;
}

std::vector<NamedRegion> named(PrefillRegions const& r) {
    return {{"nvis_gt_512", r.nVisGt512, false},
            {"chunked", r.chunked, false},
            {"chunk_at_t0", r.chunkAtSeqStart, false},
            {"chunk_at_ctx_minus_1", r.chunkAtLastValid, false},
            {"chunk_in_padding", r.chunkInPadding, false},
            {"chunk_at_block_edge", r.chunkAtBlockEdge, false},
            {"bf16", r.bf16, false},
            {"tiny_subnormal_sum", r.tinySubnormalSum, false},
            {"huge", r.huge, false},
            {"nonfinite_valid", r.nonFiniteValid, false},
            {"nonfinite_padding", r.nonFinitePadding, false},
            {"page_crossed", r.pageCrossed, false},
            {"hole_used", r.holeUsed, true},
            {"out_of_plane_used", r.outOfPlaneUsed, true},
            {"truncated_hit", r.truncatedHit, true}};
}

std::vector<NamedRegion> named(DecodeRegions const& r) {
    return {{"nvis_gt_512", r.nVisGt512, false},
            {"block_completes", r.blockCompletes, false},
            {"page_edge", r.pageEdge, false},
            {"huge", r.huge, false},
            {"nonfinite_valid", r.nonFiniteValid, false},
            {"nonfinite_invalid_row", r.nonFiniteInvalid, false},
            {"bf16", r.bf16, false},
            {"hole_used", r.holeUsed, true},
            {"out_of_plane_used", r.outOfPlaneUsed, true},
            {"truncated_hit", r.truncatedHit, true}};
}

namespace {

// cover() of the regions that are not the pool's, nvis_gt_512 and chunked at the floors given.
void coverNamed(std::vector<NamedRegion> const& regions, double nVisFloor, double chunkedFloor) {
    for (NamedRegion const& n : regions) {
        std::string const name = n.name;
        if (!n.pool)
            coverage::cover(name, n.hit, name == "nvis_gt_512" ? nVisFloor : name == "chunked" ? chunkedFloor : 0.0);
    }
}

} // namespace

void coverPrefill(PrefillRegions const& r, double nVisFloor, double chunkedFloor) {
    coverNamed(named(r), nVisFloor, chunkedFloor);
}

void coverDecode(DecodeRegions const& r, double nVisFloor) {
    coverNamed(named(r), nVisFloor, 0.0);
}

} // namespace prop
} // namespace qsa

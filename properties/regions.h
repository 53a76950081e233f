// The regions a generated case reaches, computed from the case itself (never from the implementation
// under test), for the coverage lines of coverage.h: nVis > 512, chunking and where the chunk boundaries
// fall, payload extremes, pool entries that a run really dereferences or skips, ties at rank 512.
#pragma once

#include <cstdint>
#include <vector>

#include "properties/coverage.h"
#include "reference/qsaReference.h"

namespace qsa {
namespace prop {

struct PrefillRegions {
    bool nVisGt512 = false;       // a valid row with nVis = (t + 1) / 4 > 512
    bool chunked = false;         // B*S > Rc
    bool chunkAtSeqStart = false; // a boundary row k*Rc is (b, 0), b > 0
    bool chunkAtLastValid = false;
    bool chunkInPadding = false;
    bool chunkAtBlockEdge = false; // a boundary at valid t > 0 with t % 4 == 0
    bool bf16 = false;
    bool tinySubnormalSum = false; // a valid q head whose s / 128 is subnormal
    bool huge = false;             // a valid input of magnitude >= 2^14 (half) / 2^56 (bf16), or inf
    bool nonFiniteValid = false;   // NaN / Inf in a valid row
    bool nonFinitePadding = false; // NaN / Inf in a padded row
    bool pageCrossed = false;      // a sequence uses a second page slot (ctx > 128)
    bool holeUsed = false;         // a -1 entry a run would dereference without the guard
    bool outOfPlaneUsed = false;
    bool truncatedHit = false; // a slot >= maxPagesPerSeq that a run would use
};
PrefillRegions prefillRegions(ref::PrefillCase const& c);

struct DecodeRegions {
    bool nVisGt512 = false;      // a step row with ctx / 4 > 512
    bool blockCompletes = false; // a step with ctx % 4 == 0 (B1 compresses a block)
    bool pageEdge = false;       // a step whose new token is the first or last row of a page
    bool bf16 = false;
    bool holeUsed = false;
    bool outOfPlaneUsed = false;
    bool truncatedHit = false;
    // Payload extremes a step reads: a valid row's own input (indexQk), and in the chain's first step, when it
    // carries its pool data, the kbar of the V-tails B2 reads (later steps read V-tails that B1 wrote from
    // earlier rows' inputs).
    bool huge = false;             // magnitude >= 2^14 (half) / 2^56 (bf16), or inf
    bool nonFiniteValid = false;   // NaN / Inf
    bool nonFiniteInvalid = false; // NaN / Inf in the input of an invalid row (which must stay inert)
    // Not in named(): covered by decode_stages_test and counted by the corpus under their own names.
    bool invalidRow = false;       // a row with ctx < 1 or ctx / 4 > maxBlocks (contract section 5)
    bool validAtFloorEdge = false; // a valid row with ctx / 4 == maxBlocks < ceilDiv(ctx, 4)
};
// Regions of the steps of a chain (ctx per step and row), on the chain's page table.
DecodeRegions decodeRegions(std::vector<ref::DecodeCase> const& steps);

// Whether the (maxRank+1)-th and (maxRank+2)-th largest of n logits are equal (ties across the selection
// threshold: with maxRank = 511, ranks 512 and 513 counted from 1). False when n <= maxRank + 1.
bool tiesAtRank(float const* logits, int32_t n, int32_t maxRank = 511);

// A region with its name (QSA_COVERAGE lines, a fixture's `regions`). `pool`: a pool entry a run dereferences
// or skips, which the pool properties count with their own drawn floors (coverDrawn), not coverPrefill/Decode.
struct NamedRegion {
    char const* name;
    bool hit;
    bool pool;
};
// Every region of r, the pool ones last, the others in the order coverPrefill / coverDecode count them.
std::vector<NamedRegion> named(PrefillRegions const& r);
std::vector<NamedRegion> named(DecodeRegions const& r);

// cover() of every prefill region; `nVisFloor` / `chunkedFloor` are the floors the property claims.
void coverPrefill(PrefillRegions const& r, double nVisFloor, double chunkedFloor);
void coverDecode(DecodeRegions const& r, double nVisFloor);

// The floors of issue 13.2: nVis > 512 in 20% (GPU) / 10% (CPU) of prefill and decode cases; chunked in
// 10% of the batch-invariance and differential cases; ties at rank 512 in 50% of the threshold properties.
double nVisFloor();
constexpr double kChunkedFloor = 0.10;
constexpr double kThresholdTieFloor = 0.50;

} // namespace prop
} // namespace qsa

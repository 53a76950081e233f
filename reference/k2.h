// K2 scores engine (contract section 4, "K2 scores"), vectorized across blocks: each block's per-lane
// fma chains and its butterfly are computed exactly as the contract orders them, 16 blocks per vector
// lane group and 4 rows per pass. Shared by the scores stage and both prefill pipelines.
#pragma once

#include "reference/qsaReference.h"

#include <cstdint>
#include <vector>

namespace qsa {
namespace ref {

constexpr int32_t kTileBlocks = 16;
constexpr int32_t kTileRows = 4;

// One sequence's kbar as floats (exact casts of the T-rounded kbar), transposed per tile of 16 blocks:
// data[(tile * 128 + d) * 16 + j] = kbar[16 * tile + j][d]; blocks past numBlocks are +0.0.
struct KbarTiles {
    int32_t numBlocks = 0;
    int32_t numTiles = 0;
    std::vector<float> data;
};

// Tiles of blocks [0, numBlocks) of one sequence from kbar bits [numBlocks, 128].
KbarTiles makeKbarTiles(DType dt, uint16_t const* kbar, int32_t numBlocks);

// Logits of nRows rows of the same sequence (any count; a panel of a few dozen rows keeps each kbar tile in
// L1 while it serves every row). q[r] points at the row's [4][128] T bits (qNormed, read back exactly as
// floats), nVis[r] its visible block count (0 for a padded row: its q is not read). out[r][g] for g < outBlocks:
// the contract's logit when g < nVis[r], -FLT_MAX otherwise. Requires nVis[r] <= tiles.numBlocks.
void scoreRows(DType dt, uint16_t const* const q[], int32_t const nVis[], int nRows, KbarTiles const& tiles,
               int32_t outBlocks, float* const out[]);

// Which vector variant the engine runs on this CPU ("avx512", "avx2" or "generic"): for the bench.
char const* k2Variant();

// Variants this CPU can run, best first (e.g. {"avx512", "avx2", "generic"}).
std::vector<char const*> k2Variants();

// Forces a variant by name for the tests that hold the variants against each other; nullptr: the best one.
// Throws std::runtime_error for a variant this CPU cannot run.
void k2ForceVariant(char const* name);

} // namespace ref
} // namespace qsa

// Minimal workspace read-back of a decode run (contract section 6): after runQsaIndexerDecode, slot
// qNormed [B, 1, 4, 128] T holds B1's q output and slot logits [B, maxBlocks] FP32 (after qNormed, padded
// to 128 bytes) holds B2's valid prefix g < ctx/4 of every valid row. Written for the decode stage
// properties while the harness read-back of branch v2 was not available; to be replaced by it.
#pragma once

#include <cstdint>
#include <vector>

#include "properties/harness.h"

namespace qsa {
namespace prop {

struct DecodeReadback {
    DecodeOut out;
    std::vector<uint16_t> qNormed; // [B, 4, 128]
    std::vector<float> logits;     // [B, maxBlocks], as the workspace holds it (garbage beyond ctx/4)
};

// One decode run through the public API on a workspace filled with `fill`, pool surrounded by guard pages
// (one before, two after) of a non-zero NaN pattern, so that a dereferenced hole reads non-zero.
DecodeReadback runImplDecodeReadback(DecodeCase const& c, Fill fill, uint64_t fillSeed);

} // namespace prop
} // namespace qsa

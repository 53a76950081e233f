// The paged pool of CONTRACT.md section 3: element offsets and the per-plane guards. A cell is
// addressable only through a slot index < maxPagesPerSeq whose entry lies inside its own plane
// ([0, numPages) for K, [numPages, 2 * numPages) for V; so -1 never is); writes to any other cell are
// dropped and reads from it give +0.0 for every element.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qsa {
namespace oracle {

enum class Plane { kK = 0, kV = 1 };

struct Pool {
    uint16_t* data = nullptr;           // [2*numPages, 128, numKVHeads, poolHeadDim] T bits
    int32_t const* pageTable = nullptr; // [B, 2, maxPagesPerSeq]
    int32_t maxPagesPerSeq = 0;
    int32_t numPages = 0;
    int32_t numKVHeads = 0;
    int32_t poolHeadDim = 0;
    int32_t headSize = 0;
};

// ((page * 128 + row) * numKVHeads + head) * poolHeadDim + col, in 64 bits.
size_t elementOffset(Pool const& p, int64_t page, int64_t row, int64_t head, int64_t col);

// The indexer tail (columns [headSize, headSize + 128)) of token t of sequence b in `plane`, head `head`:
// page pageTable[b][plane][t >> 7], row t & 127. Null when the guards forbid the dereference.
uint16_t* tail(Pool const& p, int32_t b, Plane plane, int64_t t, int32_t head = 0);

// Guarded copies of one tail (128 elements of T): writes dropped, reads +0.0 (bits 0x0000).
void writeTail(Pool const& p, int32_t b, Plane plane, int64_t t, uint16_t const src[128], int32_t head = 0);
void readTail(Pool const& p, int32_t b, Plane plane, int64_t t, uint16_t dst[128]);

} // namespace oracle
} // namespace qsa

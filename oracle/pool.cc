// Section 3 addressing. See pool.h.
#include "oracle/pool.h"

#include <cstring>

namespace qsa {
namespace oracle {

size_t elementOffset(Pool const& p, int64_t page, int64_t row, int64_t head, int64_t col) {
    return size_t(((page * 128 + row) * p.numKVHeads + head) * p.poolHeadDim + col);
}

uint16_t* tail(Pool const& p, int32_t b, Plane plane, int64_t t, int32_t head) {
    int64_t const slot = t >> 7;
    if (slot >= p.maxPagesPerSeq) // a slot index >= maxPagesPerSeq: the table entry itself is not read
        return nullptr;
    int32_t const page = p.pageTable[(int64_t(b) * 2 + int64_t(plane)) * p.maxPagesPerSeq + slot];
    int64_t const lo = plane == Plane::kK ? 0 : int64_t(p.numPages);
    if (page < lo || page >= lo + p.numPages) // -1 and ids outside their own plane
        return nullptr;
    return p.data + elementOffset(p, page, t & 127, head, p.headSize);
}

void writeTail(Pool const& p, int32_t b, Plane plane, int64_t t, uint16_t const src[128], int32_t head) {
    if (uint16_t* cell = tail(p, b, plane, t, head))
        std::memcpy(cell, src, 128 * sizeof(uint16_t));
}

void readTail(Pool const& p, int32_t b, Plane plane, int64_t t, uint16_t dst[128]) {
    if (uint16_t const* cell = tail(p, b, plane, t)) {
        std::memcpy(dst, cell, 128 * sizeof(uint16_t));
    } else {
        std::memset(dst, 0, 128 * sizeof(uint16_t)); // +0.0 for every element
    }
}

} // namespace oracle
} // namespace qsa

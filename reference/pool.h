// Host model of the paged pool (contract section 3): addressing and guard rules.
#pragma once

#include "reference/stages.h"

#include <cstdint>

namespace qsa {
namespace ref {

enum class Plane { kK = 0, kV = 1 };

// Element offset of (token t of sequence b, plane) at head 0, column headSize, or -1 when the cell is
// guarded: slot t >> 7 >= maxPagesPerSeq, page entry -1, or an entry outside its plane ([0, numPages)
// for K, [numPages, 2 * numPages) for V; the V id is already offset, never re-added).
int64_t tailOffset(PoolView const& pool, int32_t b, int64_t t, Plane plane);

// 128 T elements of the tail of (b, t, plane) into out; a guarded cell reads +0.0 (bits 0x0000).
void readTail(PoolView const& pool, int32_t b, int64_t t, Plane plane, uint16_t out[128]);

// Writes 128 T elements to the tail of (b, t, plane); a guarded cell drops the write.
void writeTail(PoolView const& pool, int32_t b, int64_t t, Plane plane, uint16_t const in[128]);

// Throws std::runtime_error naming `fn` on an invalid pool state (contract section 2's list).
void checkPoolDims(char const* fn, PoolDims const& d);

// Checks a HostPool's vectors against its dims for batch size B; returns the PoolView over `data`.
PoolView viewOf(char const* fn, HostPool const& p, int32_t batchSize, std::vector<uint16_t>& data);

} // namespace ref
} // namespace qsa

// Host model of the paged pool (contract section 3).
#include "reference/pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace qsa {
namespace ref {

int64_t tailOffset(PoolView const& pool, int32_t b, int64_t t, Plane plane) {
    PoolDims const& d = pool.dims;
    int64_t const slot = t >> 7;
    if (t < 0 || slot >= d.maxPagesPerSeq) {
        return -1; // slot index >= maxPagesPerSeq: never dereferenced
    }
    int32_t const p = static_cast<int32_t>(plane);
    int64_t const page = pool.pageTable[(static_cast<int64_t>(b) * 2 + p) * d.maxPagesPerSeq + slot];
    int64_t const lo = plane == Plane::kK ? 0 : d.numPages;
    int64_t const hi = lo + d.numPages;
    if (page < lo || page >= hi) {
        return -1; // -1 (kUNUSED_PAGE_ENTRY) or outside its plane
    }
    int64_t const row = t & 127;
    return ((page * 128 + row) * d.numKVHeads + 0) * d.poolHeadDim + d.headSize;
}

void readTail(PoolView const& pool, int32_t b, int64_t t, Plane plane, uint16_t out[128]) {
    int64_t const off = tailOffset(pool, b, t, plane);
    for (int c = 0; c < 128; ++c) {
        out[c] = off < 0 ? uint16_t{0} : pool.pool[off + c];
    }
}

void writeTail(PoolView const& pool, int32_t b, int64_t t, Plane plane, uint16_t const in[128]) {
    int64_t const off = tailOffset(pool, b, t, plane);
    if (off >= 0) {
        std::copy_n(in, 128, pool.pool + off);
    }
}

void checkPoolDims(char const* fn, PoolDims const& d) {
    auto bad = [&](char const* what, int64_t v) {
        throw std::runtime_error(std::string(fn) + ": invalid pool state: " + what + " = " + std::to_string(v));
    };
    if (d.numPages <= 0) {
        bad("numPages", d.numPages);
    }
    if (d.numKVHeads <= 0) {
        bad("numKVHeads", d.numKVHeads);
    }
    if (d.headSize <= 0) {
        bad("headSize", d.headSize);
    }
    if (static_cast<int64_t>(d.headSize) + 128 > d.poolHeadDim) {
        throw std::runtime_error(std::string(fn) + ": invalid pool state: headSize + 128 = " +
                                 std::to_string(static_cast<int64_t>(d.headSize) + 128) +
                                 " > poolHeadDim = " + std::to_string(d.poolHeadDim));
    }
    if (d.maxPagesPerSeq <= 0) {
        bad("maxPagesPerSeq", d.maxPagesPerSeq);
    }
}

PoolView viewOf(char const* fn, HostPool const& p, int32_t batchSize, std::vector<uint16_t>& data) {
    checkPoolDims(fn, p.dims);
    PoolDims const& d = p.dims;
    size_t const tableSize = static_cast<size_t>(batchSize) * 2 * d.maxPagesPerSeq;
    if (p.pageTable.size() != tableSize) {
        throw std::runtime_error(std::string(fn) + ": pool.pageTable has " + std::to_string(p.pageTable.size()) +
                                 " entries, expected B*2*maxPagesPerSeq = " + std::to_string(tableSize));
    }
    size_t const poolSize = static_cast<size_t>(2) * d.numPages * 128 * d.numKVHeads * d.poolHeadDim;
    if (data.size() != poolSize) {
        throw std::runtime_error(
            std::string(fn) + ": pool.data has " + std::to_string(data.size()) +
            " elements, expected 2*numPages*128*numKVHeads*poolHeadDim = " + std::to_string(poolSize));
    }
    return PoolView{data.data(), p.pageTable.data(), d};
}

} // namespace ref
} // namespace qsa

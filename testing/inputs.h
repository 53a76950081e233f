// Input construction shared by the kernel tests, properties and fixtures: the rope tables of contract
// section 2's cosSin argument and the public API's pool state of a host pool (contract section 3).
#pragma once

#include <cstdint>
#include <vector>

namespace qsa {
namespace testlib {

// The neox rope table [rows, 64] for base `theta` (10000, or 1e7 for the model's table): row p holds
// cos(p * theta^(-i/32)) at column i and the sin at 32 + i, i < 32, computed in double and rounded once to
// FP32 (any finite table is a valid input; these look like a real one).
std::vector<float> ropeTable(double theta, int32_t rows);

// cos 1, sin 0 in every row: rope is the identity, so equal raw-k blocks give equal kbar rows at any position.
std::vector<float> identityRope(int32_t rows);

// The pool state the API takes (trt_edgellm::kernel::QsaIndexerPoolState) for a pool of dims `d`
// (ref::PoolDims) whose data and page table lie at `pool` and `pageTable` (device or host addresses, whichever
// memory the implementation under test reads): `State s = poolState(dims, pool, table);`. The conversion
// fills the API's aggregate in its field order (contract section 2), so this floor names neither type.
template <typename Dims>
struct PoolStateOf {
    Dims d;
    void* pool;
    int32_t const* pageTable;
    template <typename State>
    operator State() const {
        return State{pool, pageTable, d.maxPagesPerSeq, d.numPages, d.numKVHeads, d.poolHeadDim, d.headSize};
    }
};
template <typename Dims>
PoolStateOf<Dims> poolState(Dims const& d, void* pool, int32_t const* pageTable) {
    return {d, pool, pageTable};
}

} // namespace testlib
} // namespace qsa

// Case constructions shared by several properties: decode chains (prefill L, then decode steps to
// L + n, next to a prefill of L + n), sub-batches (a sequence alone, more S padding, other sequences
// around it), and the pool cells the contract lets a run change. Property sources include this header
// alone: it brings prop.h, regions.h and generators.h.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "properties/generators.h"
#include "properties/pool_cells.h"
#include "properties/prop.h"
#include "properties/regions.h"
#include "reference/qsaReference.h"

namespace qsa {
namespace prop {

struct Chain {
    ref::PrefillCase prefillL;          // S = max(1, max L), ctx = L, pool (canaries) sized for L + steps
    ref::PrefillCase prefillFull;       // S = max L + steps, ctx = L + steps, the same initial pool
    std::vector<ref::DecodeCase> steps; // step k (0-based): token L + k, ctx = L + k + 1; pool left empty
};
Chain makeChain(DecodeChainSpec const& s);

// The pool after a prefill of `c` by the reference's pool stages alone (K1b paged, then the raw-k tail
// scatter: what ref::runPrefill does to the pool, without K2 and the sort, so a decode chain with
// L > 2048 starts cheaply). Decode-only properties start their steps from it.
std::vector<uint16_t> refPoolAfterPrefill(ref::PrefillCase const& c);

// Walks a decode chain: step k (0-based) starts from the pool step k - 1 left (the first, from
// refPoolAfterPrefill(ch.prefillL)) and is added to the capture; step(d, k) checks it and returns the pool
// after it.
template <typename Cap, typename Step>
void forEachStep(Chain& ch, Cap& cap, Step&& step) {
    std::vector<uint16_t> pool = refPoolAfterPrefill(ch.prefillL);
    for (size_t k = 0; k < ch.steps.size(); ++k) {
        ref::DecodeCase& d = ch.steps[k];
        d.pool.data = pool;
        cap.add(d);
        pool = step(d, k);
    }
}

// The walk of a decode-chain property: the chain of `spec`, its steps covered (nVis > 512 floor `nVis`)
// and captured under `contract`, each checked by step(d, k) as in forEachStep.
template <typename Step>
void walkDecodeChain(DecodeChainSpec const& spec, char const* contract, double nVis, Step&& step) {
    Chain ch = makeChain(spec);
    coverDecode(decodeRegions(ch.steps), nVis);
    Capture cap(contract, describe(spec));
    forEachStep(ch, cap, std::forward<Step>(step));
}

// A prefill case holding sequences `seqs` of `c` (repeats allowed) with sequence length newS >= c.seqLen;
// the added rows t >= c.seqLen hold poison. Without a pool.
ref::PrefillCase subBatch(ref::PrefillCase const& c, std::vector<int32_t> const& seqs, int32_t newS,
                          ActSpec const& act);

// LIVE indexer cells after a sequence of total length T (contract 6): V-tails of complete blocks and
// K-tails of the trailing incomplete block. Returns "" when a and b agree on all of them.
std::string diffLiveCells(ref::HostPool const& layout, std::vector<int32_t> const& totals,
                          std::vector<uint16_t> const& a, std::vector<uint16_t> const& b);

} // namespace prop
} // namespace qsa

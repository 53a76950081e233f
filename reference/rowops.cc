// Per-row building blocks. See rowops.h.
#include "reference/rowops.h"

#include "reference/numerics.h"

#include <algorithm>
#include <vector>

namespace qsa {
namespace ref {

void toFloats(DType dt, uint16_t const* bits, float out[128]) {
    for (int d = 0; d < 128; ++d) {
        out[d] = toFloat(dt, bits[d]);
    }
}

void normRopeT(DType dt, uint16_t const* x, float const wf[128], float const* cosSinRow, float rmsEps, uint16_t* out) {
    float xf[128];
    float o[128];
    toFloats(dt, x, xf);
    normRope(xf, wf, cosSinRow, rmsEps, o);
    for (int d = 0; d < 128; ++d) {
        out[d] = fromFloat(dt, o[d]); // step 6: one cast at the very end
    }
}

void kbarOfBlock(DType dt, uint16_t const* const k[4], float const wf[128], float const* cosSinRow, float rmsEps,
                 uint16_t* out) {
    uint16_t m[128];
    for (int d = 0; d < 128; ++d) {
        float const mean =
            blockMean(toFloat(dt, k[0][d]), toFloat(dt, k[1][d]), toFloat(dt, k[2][d]), toFloat(dt, k[3][d]));
        m[d] = fromFloat(dt, mean); // the cast of the block mean is part of the contract
    }
    normRopeT(dt, m, wf, cosSinRow, rmsEps, out);
}

namespace {

// The kSel smallest of (u[g], g) over g < n (u: an order key where smaller is better), as composite keys
// (u << 32 | g) in ascending order. Equal u are ranked by ascending g: the contract's tie rule.
// A 12-bit histogram of u's top bits finds the bucket that holds the kSel-th key; everything below it is
// selected, and only that bucket is partially ordered. Exact for any key distribution.
void smallestComposite(uint32_t const* u, int32_t n, int32_t kSel, std::vector<uint64_t>& out) {
    out.clear();
    if (kSel >= n) {
        for (int32_t g = 0; g < n; ++g) {
            out.push_back((static_cast<uint64_t>(u[g]) << 32) | static_cast<uint32_t>(g));
        }
        std::sort(out.begin(), out.end());
        return;
    }
    constexpr int kBits = 12;
    std::vector<int32_t> hist(size_t{1} << kBits, 0);
    for (int32_t g = 0; g < n; ++g) {
        ++hist[u[g] >> (32 - kBits)];
    }
    uint32_t bucket = 0;
    int32_t below = 0;
    while (below + hist[bucket] < kSel) {
        below += hist[bucket];
        ++bucket;
    }
    std::vector<uint64_t> edge;
    for (int32_t g = 0; g < n; ++g) {
        uint32_t const top = u[g] >> (32 - kBits);
        uint64_t const key = (static_cast<uint64_t>(u[g]) << 32) | static_cast<uint32_t>(g);
        if (top < bucket) {
            out.push_back(key);
        } else if (top == bucket) {
            edge.push_back(key);
        }
    }
    int32_t const need = kSel - below;
    std::nth_element(edge.begin(), edge.begin() + (need - 1), edge.end());
    out.insert(out.end(), edge.begin(), edge.begin() + need);
    std::sort(out.begin(), out.end());
}

// The first kSel = min(512, nVis) blocks of the order "key(logit) descending, equal keys by ascending block id",
// in that order, into sel. Returns kSel.
template <typename KeyFn>
int32_t selectByKey(float const* logits, int32_t nVis, int32_t* sel, KeyFn key) {
    int32_t const kSel = std::min(kBlockTopK, nVis);
    if (kSel <= 0) {
        return 0;
    }
    // Descending key, ascending id == ascending (~key, id).
    std::vector<uint32_t> u(static_cast<size_t>(nVis));
    for (int32_t g = 0; g < nVis; ++g) {
        u[g] = ~key(logits[g]);
    }
    std::vector<uint64_t> keys;
    smallestComposite(u.data(), nVis, kSel, keys);
    for (int32_t i = 0; i < kSel; ++i) {
        sel[i] = static_cast<int32_t>(keys[i] & 0xFFFFFFFFu);
    }
    return kSel;
}

} // namespace

int32_t selectPrefillRow(float const* logits, int32_t nVis, int32_t* sel) {
    return selectByKey(logits, nVis, sel, cubKey); // CUB's radix key
}

int32_t selectDecodeRow(float const* logits, int32_t nVis, int32_t* sel) {
    if (nVis > kBlockTopK) {
        int32_t const kSel = selectByKey(logits, nVis, sel, selectKey); // B3's key, -0.0 below +0.0
        std::sort(sel, sel + kSel);                                     // emitted in ascending block id
        return kSel;
    }
    for (int32_t g = 0; g < nVis; ++g) {
        sel[g] = g; // every block, no logit read
    }
    return std::max(nVis, 0);
}

void expandRow(int32_t* out, int32_t const* sel, int32_t kSel, int32_t nVis, int32_t tail) {
    int32_t pos = 0;
    for (int32_t i = 0; i < kSel; ++i) {
        for (int32_t j = 0; j < 4; ++j) {
            out[pos++] = sel[i] * 4 + j;
        }
    }
    for (int32_t j = 0; j < tail; ++j) {
        out[pos++] = 4 * nVis + j;
    }
    std::fill(out + pos, out + kIndexWidth, -1);
}

void fillRow(int32_t* out) {
    std::fill(out, out + kIndexWidth, -1);
}

} // namespace ref
} // namespace qsa

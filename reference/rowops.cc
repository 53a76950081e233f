// Per-row building blocks. See rowops.h.
#include "reference/rowops.h"

#include "reference/numerics.h"

#include <algorithm>
#include <vector>

namespace qsa {
namespace ref {

void gammaToFloat(DType dt, uint16_t const* w, float wf[128]) {
    for (int d = 0; d < 128; ++d) {
        wf[d] = toFloat(dt, w[d]);
    }
}

void normRopeT(DType dt, uint16_t const* x, float const wf[128], float const* cosSinRow, float rmsEps, uint16_t* out) {
    float xf[128];
    float o[128];
    for (int d = 0; d < 128; ++d) {
        xf[d] = toFloat(dt, x[d]);
    }
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

int32_t selectPrefillRow(float const* logits, int32_t nVis, int32_t* sel) {
    int32_t const kSel = std::min(kBlockTopK, nVis);
    if (kSel <= 0) {
        return 0;
    }
    // Descending key, ascending id == ascending (~key, id): one 64-bit composite per block.
    std::vector<uint64_t> keys(static_cast<size_t>(nVis));
    for (int32_t g = 0; g < nVis; ++g) {
        keys[g] = (static_cast<uint64_t>(~cubKey(logits[g])) << 32) | static_cast<uint32_t>(g);
    }
    if (nVis > kSel) {
        std::nth_element(keys.begin(), keys.begin() + kSel, keys.end());
    }
    std::sort(keys.begin(), keys.begin() + kSel);
    for (int32_t i = 0; i < kSel; ++i) {
        sel[i] = static_cast<int32_t>(keys[i] & 0xFFFFFFFFu);
    }
    return kSel;
}

int32_t selectDecodeRow(float const* logits, int32_t nVis, int32_t* sel) {
    int32_t const kSel = std::min(kBlockTopK, nVis);
    if (kSel <= 0) {
        return 0;
    }
    if (nVis <= kBlockTopK) {
        for (int32_t g = 0; g < nVis; ++g) {
            sel[g] = g; // every block, no logit read
        }
        return nVis;
    }
    std::vector<uint64_t> keys(static_cast<size_t>(nVis));
    for (int32_t g = 0; g < nVis; ++g) {
        keys[g] = (static_cast<uint64_t>(~selectKey(logits[g])) << 32) | static_cast<uint32_t>(g);
    }
    std::nth_element(keys.begin(), keys.begin() + kSel, keys.end());
    for (int32_t i = 0; i < kSel; ++i) {
        sel[i] = static_cast<int32_t>(keys[i] & 0xFFFFFFFFu);
    }
    std::sort(sel, sel + kSel); // emitted in ascending block id
    return kSel;
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
    while (pos < kIndexWidth) {
        out[pos++] = -1;
    }
}

void fillRow(int32_t* out) {
    for (int32_t i = 0; i < kIndexWidth; ++i) {
        out[i] = -1;
    }
}

} // namespace ref
} // namespace qsa

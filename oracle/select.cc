// Selection keys and K4 (section 4). See stages.h.
#include <algorithm>

#include "oracle/stages.h"

namespace qsa {
namespace oracle {

uint32_t decodeKey(float logit) {
    uint32_t const b = floatBits(logit);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

uint32_t prefillKey(float logit) {
    return decodeKey(floatBits(logit) == 0x80000000u ? 0.0f : logit); // CUB treats -0.0 and +0.0 as equal
}

void expandRow(int32_t* out, int32_t const* sel, int32_t kSel, int32_t nVis, int32_t tail) {
    for (int32_t i = 0; i < kSel; ++i) {
        for (int32_t j = 0; j < 4; ++j)
            out[4 * i + j] = sel[i] * 4 + j;
    }
    for (int32_t j = 0; j < tail; ++j)
        out[4 * kSel + j] = 4 * nVis + j;
    for (int32_t e = 4 * kSel + tail; e < kWidth; ++e)
        out[e] = -1;
}

void minusOneRow(int32_t* out) {
    std::fill(out, out + kWidth, -1);
}

} // namespace oracle
} // namespace qsa

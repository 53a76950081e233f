// What a run of the implementation under test leaves behind, as the properties and fixture replay hold it
// (plain structs, no harness): the outputs of contract section 2 and, optionally, the stage outputs read
// back from the workspace (section 6, last paragraph). The profile `fast` judges (fast_judges.h) read these.
#pragma once

#include <cstdint>
#include <vector>

namespace qsa {
namespace prop {

struct PrefillOut {
    std::vector<int32_t> outIdx; // [B, S, 2051]
    std::vector<uint16_t> pool;  // contents after the run (with a pool)
    // readStages only: the workspace's qNormed slot [B, S, 4, 128] T (K1a) and kbar slot [B, MB, 128] T (K1b).
    std::vector<uint16_t> qNormed, kbar;
};

struct DecodeOut {
    std::vector<int32_t> outIdx; // [B, 1, 2051]
    std::vector<uint16_t> pool;
    std::vector<int32_t> splitCounters;
    // readStages only: the qNormed slot [B, 1, 4, 128] T (B1) and the whole logits slot [B, maxBlocks] FP32
    // (B2; only each valid row's prefix g < ctx / 4 is specified).
    std::vector<uint16_t> qNormed;
    std::vector<float> logits;
};

} // namespace prop
} // namespace qsa

// The two pipelines of CONTRACT.md section 5 over host memory, one function per contract stage inside
// prefill.cc / decode.cc. Arguments are already checked (api.cc); T is carried as bit patterns and Act.
#pragma once

#include <cstdint>

#include "oracle/pool.h"
#include "oracle/scalar.h"

namespace qsa {
namespace oracle {

// The inputs both runners take (section 2); decode has S = 1.
struct Inputs {
    Act act = Act::kHalf;
    int32_t* outIdx = nullptr;               // [B, S, 2051]
    uint16_t const* indexQk = nullptr;       // [B, S, 640]
    float const* cosSin = nullptr;           // prefill: [>= S, 64]
    int32_t const* contextLengths = nullptr; // [B]: prefill clamps it to [0, S]; decode's includes the new token
    uint16_t const* wQ = nullptr;            // [128] raw gamma
    uint16_t const* wK = nullptr;
    float rmsEps = 0.0f;
};

struct PrefillIo : Inputs {
    int32_t B = 0, S = 0;
    Pool const* pool = nullptr; // null: no pool
};

// Section 6 prefill slots (pointers into the caller's workspace); `pairs` elements in each sort slot.
struct PrefillSlots {
    uint16_t* qNormed = nullptr; // [B, S, 4, 128] T
    uint16_t* kbar = nullptr;    // [B, MB, 128] T
    float* keys = nullptr;
    float* keysAlt = nullptr;
    int32_t* values = nullptr;
    int32_t* valuesAlt = nullptr;
};

struct DecodeIo : Inputs {
    Pool pool;
    int32_t* splitCounters = nullptr; // [B, numKVHeads] or null
    int32_t B = 0, maxBlocks = 0;
};

struct DecodeSlots {
    uint16_t* qNormed = nullptr; // [B, 1, 4, 128] T
    float* logits = nullptr;     // [B, maxBlocks] FP32
};

// MB = ceilDiv(S, 4); Rc = min(B*S, max(8388608 / MB, 256)); pairs = min(B*S*MB, max(8388608, 256*MB)).
int64_t blocksOf(int32_t S);
int64_t chunkRows(int32_t B, int32_t S);
int64_t sortSlotElements(int32_t B, int32_t S);

void runPrefill(PrefillIo const& io, PrefillSlots const& ws);
void runDecode(DecodeIo const& io, DecodeSlots const& ws);

// ---- shared by both pipelines (select.cc) ----

// The radix keys that define "logit descending" (section 4, Selection): the prefill sort's (CUB: -0.0
// counts as +0.0, NaN by its bits) and B3's (u = sign ? ~bits : bits | 0x80000000).
uint32_t prefillKey(float logit);
uint32_t decodeKey(float logit);

// K4 for one valid row: out[4i + j] = sel[i] * 4 + j (i < kSel, j < 4), out[4 kSel + j] = 4 nVis + j
// (j < tail), then -1 up to 2051.
void expandRow(int32_t* out, int32_t const* sel, int32_t kSel, int32_t nVis, int32_t tail);
// A padded or invalid row: all -1.
void minusOneRow(int32_t* out);

} // namespace oracle
} // namespace qsa

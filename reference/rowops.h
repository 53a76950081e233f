// Per-row building blocks shared by the stage mirrors (stages.cc) and the pipelines (pipelines.cc).
#pragma once

#include "reference/qsaReference.h"

#include <cstdint>

namespace qsa {
namespace ref {

// 128 T values (bits: a gamma, a q head, a kbar row) -> floats (exact).
void toFloats(DType dt, uint16_t const* bits, float out[128]);

// normRope of 128 T values x (bits) with gamma wf at cosSin row cosSinRow, cast to T once at the end.
void normRopeT(DType dt, uint16_t const* x, float const wf[128], float const* cosSinRow, float rmsEps, uint16_t* out);

// K1b of one block from its 4 raw k rows (bits): m = (((k0 + k1) + k2) + k3) * 0.25f per dim, cast to T
// and read back (part of the contract), then normRope at cosSinRow (pos = 4g), cast to T.
void kbarOfBlock(DType dt, uint16_t const* const k[4], float const wf[128], float const* cosSinRow, float rmsEps,
                 uint16_t* out);

// Prefill selection of a row with nVis visible logits (logits[g], g < nVis): the first kSel = min(512, nVis)
// blocks of the order "logit descending by CUB's radix key, equal keys by ascending block id", in that
// order, into sel. Returns kSel.
int32_t selectPrefillRow(float const* logits, int32_t nVis, int32_t* sel);

// Decode B3 selection: the same set under B3's key (u = sign ? ~bits : bits | 0x80000000), emitted in
// ascending block id. When nVis <= 512 every block is selected and no logit is read. Returns kSel.
int32_t selectDecodeRow(float const* logits, int32_t nVis, int32_t* sel);

// K4 of one row: out[4i + j] = sel[i] * 4 + j (i < kSel, j < 4), out[4 kSel + j] = 4 nVis + j (j < tail),
// then -1 up to 2051.
void expandRow(int32_t* out, int32_t const* sel, int32_t kSel, int32_t nVis, int32_t tail);

// A padded / invalid row: all -1.
void fillRow(int32_t* out);

inline int32_t clampCtx(int32_t ctx, int32_t hi) {
    return ctx < 0 ? 0 : (ctx > hi ? hi : ctx);
}

// Sequence b's context length as prefill uses it (contract section 4): contextLengths[b] clamped to [0, seqLen].
inline int32_t caseCtx(PrefillCase const& c, int32_t b) {
    return clampCtx(c.contextLengths[b], c.seqLen);
}

} // namespace ref
} // namespace qsa

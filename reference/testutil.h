// Test helpers: building prefill/decode cases from T bit patterns. Test-only.
#pragma once

#include "reference/qsaReference.h"

#include <cstdint>
#include <vector>

namespace qsa {
namespace ref {
namespace test {

constexpr uint16_t kHalfOne = 0x3C00;
constexpr uint16_t kHalfMinusOne = 0xBC00;
constexpr uint16_t kHalfNaN = 0x7E00;

// cosSin [rows, 64] with cos = c, sin = s everywhere.
inline std::vector<float> uniformCosSin(int32_t rows, float c, float s) {
    std::vector<float> cs(static_cast<size_t>(rows) * 64);
    for (int32_t p = 0; p < rows; ++p) {
        for (int i = 0; i < 32; ++i) {
            cs[p * 64 + i] = c;
            cs[p * 64 + 32 + i] = s;
        }
    }
    return cs;
}

// A prefill case with every input element set to `fill` bits, zero gammas, rmsEps = 0, cos = 1, sin = 0.
inline PrefillCase blankPrefill(DType dt, int32_t batchSize, int32_t seqLen, std::vector<int32_t> ctx, uint16_t fill) {
    PrefillCase c;
    c.dtype = dt;
    c.batchSize = batchSize;
    c.seqLen = seqLen;
    c.indexQk.assign(static_cast<size_t>(batchSize) * seqLen * kQkWidth, fill);
    c.cosSin = uniformCosSin(seqLen, 1.0f, 0.0f);
    c.contextLengths = std::move(ctx);
    c.wQ.assign(128, 0);
    c.wK.assign(128, 0);
    c.rmsEps = 0.0f;
    return c;
}

inline uint16_t* qkRow(PrefillCase& c, int32_t b, int32_t t) {
    return c.indexQk.data() + (static_cast<size_t>(b) * c.seqLen + t) * kQkWidth;
}

inline int32_t const* outRow(std::vector<int32_t> const& outIdx, int64_t r) {
    return outIdx.data() + r * kIndexWidth;
}

// The expected row: `prefix` then -1 up to 2051.
inline std::vector<int32_t> rowOf(std::vector<int32_t> prefix) {
    prefix.resize(kIndexWidth, -1);
    return prefix;
}

inline std::vector<int32_t> rowVec(std::vector<int32_t> const& outIdx, int64_t r) {
    return std::vector<int32_t>(outRow(outIdx, r), outRow(outIdx, r) + kIndexWidth);
}

inline uint32_t bitsOfFloat(float f) {
    uint32_t u;
    static_assert(sizeof(u) == sizeof(f), "");
    __builtin_memcpy(&u, &f, 4);
    return u;
}

} // namespace test
} // namespace ref
} // namespace qsa

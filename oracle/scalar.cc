// Section 4 step by step. See scalar.h.
#include "oracle/scalar.h"

#include <cmath>
#include <cstring>

namespace qsa {
namespace oracle {

// The butterfly: for m in 16, 8, 4, 2, 1: p[l] = p[l] + p[l ^ m] for all l simultaneously; the answer is p[0].
float warpSum(float const in[kLanes]) {
    float p[kLanes];
    for (int l = 0; l < kLanes; ++l)
        p[l] = in[l];
    for (int m = 16; m >= 1; m /= 2) {
        float next[kLanes]; // every lane reads the values before this round
        for (int l = 0; l < kLanes; ++l)
            next[l] = p[l] + p[l ^ m];
        for (int l = 0; l < kLanes; ++l)
            p[l] = next[l];
    }
    return p[0];
}

namespace {

// The same butterfly restricted to the additions that lane 0's answer depends on: p[0] after round m = 1
// reads lanes 0 and 1 after round 2, which read lanes 0..3 after round 4, ..., lanes 0..15 after round 16.
// So in round m only lanes l < m are needed, and each computes exactly its butterfly sum p[l] + p[l ^ m]
// = p[l] + p[l + m] (same operands, same order, same rounding): bit-identical to warpSum(), 31 additions
// instead of 160 (the oracle's hot loop; scalar_test compares the two). With GCC/Clang vector types the
// rounds of 16 and 8 lanes are element-wise vector additions (each element one IEEE addition, as written).
typedef float Lanes8 __attribute__((vector_size(32)));
typedef float Lanes4 __attribute__((vector_size(16)));
__attribute__((always_inline)) inline float butterflyLane0(float const in[kLanes]) {
    Lanes8 p0, p1, p2, p3; // lanes 0..7, 8..15, 16..23, 24..31
    std::memcpy(&p0, in + 0, sizeof p0);
    std::memcpy(&p1, in + 8, sizeof p1);
    std::memcpy(&p2, in + 16, sizeof p2);
    std::memcpy(&p3, in + 24, sizeof p3);
    Lanes8 const lo16 = p0 + p2, hi16 = p1 + p3; // m = 16: lanes 0..7 and 8..15, p[l] + p[l + 16]
    Lanes8 const r8 = lo16 + hi16;               // m = 8: lanes 0..7, p[l] + p[l + 8]
    Lanes4 const r4 = Lanes4{r8[0], r8[1], r8[2], r8[3]} + Lanes4{r8[4], r8[5], r8[6], r8[7]}; // m = 4
    float const r2lo = r4[0] + r4[2], r2hi = r4[1] + r4[3];                                    // m = 2: lanes 0, 1
    return r2lo + r2hi;                                                                        // m = 1: lane 0
}

} // namespace

void normRope(Act a, float const x[kDim], float const w[kDim], float const* cosSinRow, float rmsEps, uint16_t out[kDim],
              bool reversedSumSq) {
    // 1. partial[l] = +0.0; for i in 0..3: partial[l] = fma(x[4l+i], x[4l+i], partial[l]).
    float partial[kLanes];
    for (int l = 0; l < kLanes; ++l) {
        partial[l] = 0.0f;
        for (int i = 0; i < 4; ++i) {
            int const d = reversedSumSq ? 4 * l + 3 - i : 4 * l + i;
            partial[l] = std::fma(x[d], x[d], partial[l]);
        }
    }
    // 2. s = warpSum(partial); v = fma(s, 0.0078125f, rmsEps).
    float const s = warpSum(partial);
    float const v = std::fma(s, 0.0078125f, rmsEps);
    // 3. inv = correctly rounded 1/sqrt(v).
    float const inv = ref::rsqrtRn(v);
    // 4. y[d] = (x[d] * inv) * (1.0f + w[d]): three roundings.
    float y[kDim];
    for (int d = 0; d < kDim; ++d) {
        float const scaled = x[d] * inv;
        float const gain = 1.0f + w[d];
        y[d] = scaled * gain;
    }
    // 5. neox rope over [0, 64): o[i] = fma(y[i], c, -(y[i+32] * s)), o[i+32] = fma(y[i+32], c, y[i] * s).
    float o[kDim];
    for (int i = 0; i < 32; ++i) {
        float const c = cosSinRow[i];
        float const sn = cosSinRow[32 + i];
        float const hiTimesSin = y[i + 32] * sn;
        float const loTimesSin = y[i] * sn;
        o[i] = std::fma(y[i], c, -hiTimesSin);
        o[i + 32] = std::fma(y[i + 32], c, loTimesSin);
    }
    for (int d = 64; d < kDim; ++d)
        o[d] = y[d];
    // 6. Cast to T once, at the very end.
    for (int d = 0; d < kDim; ++d)
        out[d] = toT(a, o[d]);
}

// K2 dominates the oracle's time. On x86-64 a second copy of logit() is compiled for CPUs with FMA and AVX2
// and chosen at load time: the same scalar source and the same roundings (fma is single-rounding either
// way, -ffp-contract=off holds and nothing is reassociated), only std::fma becomes an instruction instead
// of a libm call and the lane loops may use vector registers.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QSA_ORACLE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define QSA_ORACLE_CLONES
#endif

QSA_ORACLE_CLONES float logit(float const q[kHeads * kDim], float const kbar[kDim]) {
    float dot[kHeads];
    for (int h = 0; h < kHeads; ++h) {
        float const* qh = q + h * kDim;
        // partial[l] = +0.0; for i in 0..3: partial[l] = fma(q[h][l + 32i], kbar[l + 32i], partial[l]),
        // every lane l at once (each lane's chain keeps the order i = 0, 1, 2, 3).
        float partial[kLanes];
        for (int l = 0; l < kLanes; ++l)
            partial[l] = 0.0f;
        for (int i = 0; i < 4; ++i) {
            for (int l = 0; l < kLanes; ++l)
                partial[l] = std::fma(qh[l + 32 * i], kbar[l + 32 * i], partial[l]);
        }
        dot[h] = butterflyLane0(partial); // = warpSum(partial), see butterflyLane0
    }
    // (((relu(dot0) + relu(dot1)) + relu(dot2)) + relu(dot3)) * 0x3DB504F3.
    float acc = relu(dot[0]);
    acc = acc + relu(dot[1]);
    acc = acc + relu(dot[2]);
    acc = acc + relu(dot[3]);
    return acc * bitsFloat(0x3DB504F3u);
}

} // namespace oracle
} // namespace qsa

// Warp-level building blocks of K1a / K1b / B1 (contract section 4, normRope and k-compress).
// Lane l of the warp is the contract's lane l: it owns x[4l .. 4l+3] for the sum of squares and the
// output dims l, l+32, l+64, l+96.
#pragma once

#include "kernels/qsaCommon.cuh"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {

template <typename T>
__device__ __forceinline__ void storeZeroRowWarp(T* out, int lane) {
    uint16_t* o16 = reinterpret_cast<uint16_t*>(out);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        o16[lane + 32 * j] = 0; // exact zeros are +0.0
    }
}

// normRope inputs of one 128-vector row x of T: lane l's sq[i] = x[4l + i] (its sum-of-squares dims) and
// xo[i] = x[l + 32 i] (its output dims). `sumSqReversed` loads sq[i] = x[4l + 3 - i]: only the K1a / B1
// mutants 1 and 31 ask for it.
template <typename T>
__device__ __forceinline__ void loadRowWarp(T const* x, int lane, float sq[4], float xo[4],
                                            bool sumSqReversed = false) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        int const sqDim = sumSqReversed ? 4 * lane + 3 - i : 4 * lane + i;
        sq[i] = TypeOps<T>::toFloat(x[sqDim]);
        xo[i] = TypeOps<T>::toFloat(x[lane + 32 * i]);
    }
}

// normRope of one 128-vector (sq / xo as in normRopeWarp) with raw gamma w and rope position pos;
// returns the T bits of the outputs at dims lane + 32 j (cast once, at the very end).
template <typename T>
__device__ __forceinline__ void normRopeBitsWarp(uint16_t bits[4], float const sq[4], float const xo[4], T const* w,
                                                 float rmsEps, float const* cosSin, int64_t pos, int lane) {
    float wo[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        wo[j] = TypeOps<T>::toFloat(w[lane + 32 * j]);
    }
    float const cosv = cosSin[pos * 64 + lane];
    float const sinv = cosSin[pos * 64 + 32 + lane];
    float o[4];
    normRopeWarp(sq, xo, wo, rmsEps, cosv, sinv, o);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        bits[j] = floatToBits<T>(o[j]);
    }
}

// The T bits of dims lane + 32 j of a 128-vector row.
template <typename T>
__device__ __forceinline__ void storeBitsWarp(T* out, uint16_t const bits[4], int lane) {
    uint16_t* o16 = reinterpret_cast<uint16_t*>(out);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        o16[lane + 32 * j] = bits[j];
    }
}

template <typename T>
__device__ __forceinline__ void normRopeStoreWarp(T* out, float const sq[4], float const xo[4], T const* w,
                                                  float rmsEps, float const* cosSin, int64_t pos, int lane) {
    uint16_t bits[4];
    normRopeBitsWarp<T>(bits, sq, xo, w, rmsEps, cosSin, pos, lane);
    storeBitsWarp(out, bits, lane);
}

// m = (((k0 + k1) + k2) + k3) * 0.25, then cast to T and read back (the cast is part of the contract).
template <typename T>
__device__ __forceinline__ float blockMeanRounded(float k0, float k1, float k2, float k3) {
    float m = __fmul_rn(__fadd_rn(__fadd_rn(__fadd_rn(k0, k1), k2), k3), 0.25f);
    if (QSA_MUTANT(8)) {
        m = __fmul_rn(__fadd_rn(__fadd_rn(k0, k1), __fadd_rn(k2, k3)), 0.25f); // pairwise sum
    }
    float r = TypeOps<T>::toFloat(TypeOps<T>::fromFloat(m));
    if (QSA_MUTANT(9)) {
        r = m; // the cast to T skipped
    }
    return r;
}

template <typename T>
__device__ __forceinline__ float loadOrZero(T const* p, int d) {
    return p == nullptr ? 0.0f : TypeOps<T>::toFloat(p[d]); // a dropped pool read is +0.0
}

// The four raw-k rows of a block (a null row reads +0.0) -> the rounded mean at the lane's dims.
template <typename T>
__device__ __forceinline__ void compressInputsWarp(T const* k0, T const* k1, T const* k2, T const* k3, int lane,
                                                   float sq[4], float xo[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        int ds = 4 * lane + i; // the sum-of-squares dims of lane l
        if (QSA_MUTANT(10)) {
            ds = lane + 32 * i;
        }
        sq[i] = blockMeanRounded<T>(loadOrZero(k0, ds), loadOrZero(k1, ds), loadOrZero(k2, ds), loadOrZero(k3, ds));
        int const dx = lane + 32 * i;
        xo[i] = blockMeanRounded<T>(loadOrZero(k0, dx), loadOrZero(k1, dx), loadOrZero(k2, dx), loadOrZero(k3, dx));
    }
}

} // namespace qsa_detail
} // namespace kernel
} // namespace trt_edgellm

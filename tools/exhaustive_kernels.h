// Device side of the exhaustive scalar checks: the SAME device functions the kernels use (kernels/qsaCommon.cuh:
// TypeOps<T>::fromFloat / toFloat, and __frsqrt_rn as called by normRopeWarp), applied to every input pattern.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace qsa {
namespace certify {

// A deliberate bug for proving the check can fail (certify's planted-bug run): the result of `input` in check
// `which` gets its lowest bit flipped ON THE DEVICE. which: 0 none, 1 rsqrt_rn, 2 float_to_half, 3 float_to_bf16,
// 4 half_to_float, 5 bf16_to_float.
struct Plant {
    int which = 0;
    uint32_t input = 0;
};

// For u in [base, base + n): rsqrtBits[u - base] = bits of __frsqrt_rn(float(u)), halfBits / bf16Bits = the
// kernels' float -> T cast of float(u). Asynchronous on `stream`.
cudaError_t launchFloatInputs(uint32_t base, uint32_t n, uint32_t* rsqrtBits, uint16_t* halfBits, uint16_t* bf16Bits,
                              Plant plant, cudaStream_t stream);

// For every 16-bit pattern h: halfToFloat[h] / bf16ToFloat[h] = bits of the kernels' T -> float cast.
cudaError_t launchWidenAll(uint32_t* halfToFloat, uint32_t* bf16ToFloat, Plant plant, cudaStream_t stream);

// Name of the device function each check calls (recorded in the certificate).
char const* deviceFunctionName(int which);

} // namespace certify
} // namespace qsa

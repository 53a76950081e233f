// Device side of the exhaustive scalar checks (see exhaustive_kernels.h). Compiled by the same cuda_library rule
// and numerics flags as //kernels:qsa_kernels, through the kernels' own numerics header.
#include "tools/exhaustive_kernels.h"

#include "kernels/qsaCommon.cuh"

#include <algorithm>

namespace qsa {
namespace certify {

namespace {

using trt_edgellm::kernel::qsa_detail::bitsToFloat;
using trt_edgellm::kernel::qsa_detail::floatToBits;

__device__ __forceinline__ uint32_t planted(uint32_t bits, int check, uint32_t input, Plant plant) {
    return (plant.which == check && plant.input == input) ? (bits ^ 1u) : bits;
}

__global__ void floatInputsKernel(uint32_t base, uint32_t n, uint32_t* rsqrtBits, uint16_t* halfBits,
                                  uint16_t* bf16Bits, Plant plant) {
    for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
        uint32_t const u = base + static_cast<uint32_t>(i);
        float const x = __uint_as_float(u);
        // Contract section 4 step 3: inv = __frsqrt_rn(v) (normRopeWarp in kernels/qsaCommon.cuh).
        rsqrtBits[i] = planted(__float_as_uint(__frsqrt_rn(x)), 1, u, plant);
        // Casts to T: RNE, overflow to inf, every NaN -> 0x7FFF (TypeOps<T>::fromFloat).
        halfBits[i] = static_cast<uint16_t>(planted(floatToBits<__half>(x), 2, u, plant));
        bf16Bits[i] = static_cast<uint16_t>(planted(floatToBits<__nv_bfloat16>(x), 3, u, plant));
    }
}

__global__ void widenKernel(uint32_t* halfToFloat, uint32_t* bf16ToFloat, Plant plant) {
    uint32_t const h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h < 65536u) {
        // Casts from T are exact (TypeOps<T>::toFloat).
        halfToFloat[h] = planted(__float_as_uint(bitsToFloat<__half>(static_cast<uint16_t>(h))), 4, h, plant);
        bf16ToFloat[h] = planted(__float_as_uint(bitsToFloat<__nv_bfloat16>(static_cast<uint16_t>(h))), 5, h, plant);
    }
}

} // namespace

cudaError_t launchFloatInputs(uint32_t base, uint32_t n, uint32_t* rsqrtBits, uint16_t* halfBits, uint16_t* bf16Bits,
                              Plant plant, cudaStream_t stream) {
    if (n == 0) {
        return cudaSuccess;
    }
    unsigned const threads = 256;
    unsigned const blocks = static_cast<unsigned>(std::min<uint64_t>((n + threads - 1) / threads, 65536));
    floatInputsKernel<<<blocks, threads, 0, stream>>>(base, n, rsqrtBits, halfBits, bf16Bits, plant);
    return cudaGetLastError();
}

cudaError_t launchWidenAll(uint32_t* halfToFloat, uint32_t* bf16ToFloat, Plant plant, cudaStream_t stream) {
    widenKernel<<<256, 256, 0, stream>>>(halfToFloat, bf16ToFloat, plant);
    return cudaGetLastError();
}

char const* deviceFunctionName(int which) {
    switch (which) {
    case 1:
        return "__frsqrt_rn";
    case 2:
        return "qsa_detail::TypeOps<__half>::fromFloat";
    case 3:
        return "qsa_detail::TypeOps<__nv_bfloat16>::fromFloat";
    case 4:
        return "qsa_detail::TypeOps<__half>::toFloat";
    case 5:
        return "qsa_detail::TypeOps<__nv_bfloat16>::toFloat";
    default:
        return "?";
    }
}

} // namespace certify
} // namespace qsa

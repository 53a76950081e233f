// Device helpers of //kernels:bench (see bench_floor.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/bench_floor.h"
#include "testing/device_buffer.h"

namespace qsa {
namespace bench {
namespace {

constexpr int kChains = 8;
constexpr int kIters = 4096;

// kChains independent fma chains per thread so that the FMA pipes, not latency, bound the kernel.
__global__ void fmaKernel(float* sink, float a, float b) {
    float x[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c)
        x[c] = static_cast<float>(threadIdx.x + c);
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c)
            x[c] = fmaf(x[c], a, b);
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < kChains; ++c)
        s += x[c];
    if (s == 1234.5f)
        sink[threadIdx.x] = s; // keeps the chains alive
}

__global__ void copyKernel(float4* dst, float4 const* src, size_t n) {
    size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

__device__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

__global__ void fillKernel(uint16_t* p, size_t n, uint32_t seed, bool isBf16) {
    size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint32_t h = hash32(static_cast<uint32_t>(i) ^ hash32(seed + static_cast<uint32_t>(i >> 32)));
        float v = static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
        p[i] = isBf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
    }
}

// Seconds for `reps` calls of launch() on the legacy stream, timed with a pair of CUDA events.
template <typename Launch>
double timeLaunches(int reps, Launch launch) {
    cudaEvent_t e0, e1;
    QSA_CUDA(cudaEventCreate(&e0));
    QSA_CUDA(cudaEventCreate(&e1));
    QSA_CUDA(cudaEventRecord(e0));
    for (int r = 0; r < reps; ++r) {
        launch();
    }
    QSA_CUDA(cudaEventRecord(e1));
    QSA_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    QSA_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms * 1e-3;
}

int smCount() {
    int dev = 0, sms = 0;
    QSA_CUDA(cudaGetDevice(&dev));
    QSA_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
}

} // namespace

double timeFmaKernel(int reps, double* flop) {
    float* sink = nullptr;
    QSA_CUDA(cudaMalloc(&sink, 1024 * sizeof(float)));
    int blocks = smCount() * 8, threads = 256;
    auto launch = [&] { fmaKernel<<<blocks, threads>>>(sink, 0.999f, 0.001f); };
    launch(); // warm-up
    double const s = timeLaunches(reps, launch);
    cudaFree(sink);
    *flop = 2.0 * kChains * kIters * double(blocks) * threads * reps;
    return s;
}

double timeCopyKernel(void* dst, void const* src, size_t bytes, int reps) {
    size_t n = bytes / sizeof(float4);
    int blocks = smCount() * 16, threads = 512;
    auto launch = [&] {
        copyKernel<<<blocks, threads>>>(static_cast<float4*>(dst), static_cast<float4 const*>(src), n);
    };
    launch(); // warm-up
    return timeLaunches(reps, launch);
}

double timeMemcpy(void* dst, void const* src, size_t bytes, int reps) {
    auto launch = [&] { QSA_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); };
    launch(); // warm-up
    return timeLaunches(reps, launch);
}

void fillRandomT(uint16_t* p, size_t n, uint32_t seed, bool isBf16, cudaStream_t stream) {
    fillKernel<<<1024, 256, 0, stream>>>(p, n, seed, isBf16);
    QSA_CUDA(cudaGetLastError());
}

} // namespace bench
} // namespace qsa

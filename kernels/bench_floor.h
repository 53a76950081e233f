// Device helpers of //kernels:bench: the machine's own floors measured in the same run (FP32 FMA rate,
// device-to-device copy bandwidth of a kernel and of cudaMemcpy) and a deterministic device-side fill of T inputs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace qsa {
namespace bench {

// Seconds for `reps` launches of an FMA-bound kernel; *flop gets the FLOP count executed (2 per fma).
double timeFmaKernel(int reps, double* flop);

// Seconds for `reps` copies of `bytes` by a device copy kernel (each copy reads and writes `bytes`).
double timeCopyKernel(void* dst, void const* src, size_t bytes, int reps);

// Fills n 16-bit elements with T bit patterns of values in [-1, 1) (isBf16 selects the format),
// deterministic in (seed, index).
void fillRandomT(uint16_t* p, size_t n, uint32_t seed, bool isBf16, cudaStream_t stream);

// Seconds for `reps` device-to-device cudaMemcpyAsync of `bytes` on the legacy stream.
double timeMemcpy(void* dst, void const* src, size_t bytes, int reps);

} // namespace bench
} // namespace qsa

// Memory and stream backend of the harness (harness.cc): device memory for the GPU implementation
// (harness_gpu.cc: testing/device_buffer.h) or host memory for the host implementation, //oracle
// (harness_host.cc). Exactly one is linked.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

namespace qsa {
namespace prop {
namespace backend {

bool onGpu();

// One allocation of the backend's memory: at least 256-byte aligned, never null, freed with its last owner.
std::shared_ptr<void> alloc(size_t bytes);

void upload(void* dst, void const* src, size_t bytes);
void download(void* dst, void const* src, size_t bytes);
cudaStream_t stream(int which); // 0: legacy default; 1, 2: created once, reused
void sync(cudaStream_t s);
void fence(); // every upload so far has landed (device-wide synchronize)
// Work on stream s (RunOptions::behindStreamWork): a host-side wait of `ms` milliseconds (cudaLaunchHostFunc),
// and a device-to-device copy. The host backend runs synchronously: no wait, the copy at once.
void holdStream(cudaStream_t s, int ms);
void copyOnStream(void* dst, void const* src, size_t bytes, cudaStream_t s);

} // namespace backend
} // namespace prop
} // namespace qsa

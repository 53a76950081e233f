// GPU backend of the harness: device buffers (testing/device_buffer.h) and two created streams, for the
// implementation behind //api:impl. Buffers are freed with cudaFree after the work on them is synchronized.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "properties/backend.h"
#include "testing/device_buffer.h"

namespace qsa {
namespace prop {
namespace backend {

bool onGpu() {
    return true;
}

std::shared_ptr<void> alloc(size_t bytes) {
    auto buf = std::make_shared<testlib::DeviceBuffer<uint8_t>>(bytes > 0 ? bytes : 256);
    return std::shared_ptr<void>(buf, buf->get()); // the buffer lives as long as the returned pointer
}

void upload(void* dst, void const* src, size_t bytes) {
    if (bytes > 0)
        QSA_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void download(void* dst, void const* src, size_t bytes) {
    QSA_CUDA(cudaDeviceSynchronize()); // the run's work on src is done
    if (bytes > 0)
        QSA_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

cudaStream_t stream(int which) {
    // Created on first use and kept for the process (never destroyed: no CUDA call after the runtime's exit).
    static testlib::Stream* streams[3] = {nullptr, nullptr, nullptr};
    if (which < 0 || which > 2)
        throw std::runtime_error("harness_gpu stream: which must be 0..2, got " + std::to_string(which));
    if (which == 0)
        return nullptr;
    if (streams[which] == nullptr)
        streams[which] = new testlib::Stream();
    return streams[which]->get();
}

void fence() {
    QSA_CUDA(cudaDeviceSynchronize());
}

void holdStream(cudaStream_t s, int ms) {
    auto wait = [](void* p) { std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(p))); };
    QSA_CUDA(cudaLaunchHostFunc(s, wait, reinterpret_cast<void*>(intptr_t(ms))));
}

void copyOnStream(void* dst, void const* src, size_t bytes, cudaStream_t s) {
    if (bytes > 0)
        QSA_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
}

void sync(cudaStream_t s) {
    QSA_CUDA(cudaStreamSynchronize(s));
    QSA_CUDA(cudaGetLastError()); // an error of the run
}

} // namespace backend
} // namespace prop
} // namespace qsa

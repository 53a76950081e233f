// GPU backend of the harness: device buffers and two created streams, for the implementation behind
// //api:impl. Buffers are freed with cudaFree after the work on them is synchronized.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "properties/backend.h"

namespace qsa {
namespace prop {
namespace backend {
namespace {

void check(cudaError_t e, char const* what) {
    if (e != cudaSuccess)
        throw std::runtime_error(std::string("harness_gpu ") + what + ": " + cudaGetErrorString(e));
}

} // namespace

bool onGpu() {
    return true;
}

void* alloc(size_t bytes) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes > 0 ? bytes : 256), "cudaMalloc");
    return p;
}

void release(void* p) {
    // A free after a failed run must not hide the run's error: report nothing here.
    (void)cudaFree(p);
}

void upload(void* dst, void const* src, size_t bytes) {
    if (bytes > 0)
        check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload");
}

void download(void* dst, void const* src, size_t bytes) {
    check(cudaDeviceSynchronize(), "sync before download");
    if (bytes > 0)
        check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "download");
}

cudaStream_t stream(int which) {
    static cudaStream_t streams[3] = {nullptr, nullptr, nullptr};
    if (which < 0 || which > 2)
        throw std::runtime_error("harness_gpu stream: which must be 0..2");
    if (which > 0 && streams[which] == nullptr)
        check(cudaStreamCreateWithFlags(&streams[which], cudaStreamNonBlocking), "stream create");
    return streams[which];
}

void fence() {
    check(cudaDeviceSynchronize(), "fence");
}

void sync(cudaStream_t s) {
    check(cudaStreamSynchronize(s), "stream sync");
    check(cudaGetLastError(), "after run");
}

} // namespace backend
} // namespace prop
} // namespace qsa

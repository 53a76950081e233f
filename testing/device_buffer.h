// Device memory of the tests, fixture replay, tools and benchmarks: THE RAII device buffer and stream, and the
// CUDA error check they share. Errors throw std::runtime_error naming the call, file and line.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qsa {
namespace testlib {

void cudaCheck(cudaError_t e, char const* what, char const* file, int line);
#define QSA_CUDA(x) ::qsa::testlib::cudaCheck((x), #x, __FILE__, __LINE__)

// Owns n elements of E on the device (at least one byte is allocated, so the pointer is never null; cudaMalloc
// aligns to 256 bytes, above the 128 of contract section 2).
template <typename E>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t n) { alloc(n); }
    // A device copy of `host` (its bytes as elements of E).
    template <typename X>
    explicit DeviceBuffer(std::vector<X> const& host) {
        alloc(host.size() * sizeof(X) / sizeof(E));
        upload(host);
    }
    ~DeviceBuffer() { release(); }
    DeviceBuffer(DeviceBuffer const&) = delete;
    DeviceBuffer& operator=(DeviceBuffer const&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            release();
            ptr_ = o.ptr_;
            n_ = o.n_;
            o.ptr_ = nullptr;
            o.n_ = 0;
        }
        return *this;
    }

    void alloc(size_t n) {
        release();
        n_ = n;
        void* p = nullptr;
        QSA_CUDA(cudaMalloc(&p, n * sizeof(E) > 0 ? n * sizeof(E) : 1));
        ptr_ = static_cast<E*>(p);
    }
    E* get() const { return ptr_; }
    // The buffer as elements of another type (the T of a typed launcher over uint16_t bits).
    template <typename P>
    P* as() const {
        return reinterpret_cast<P*>(ptr_);
    }
    size_t size() const { return n_; }
    size_t bytes() const { return n_ * sizeof(E); }

    // Host -> device; the host vector's bytes must equal the buffer's. cudaMemcpy from pageable memory and
    // cudaMemset may return before the device write is done, and they run on the legacy stream, which does
    // not order with non-blocking streams: every fill ends with a device sync.
    template <typename X>
    void upload(std::vector<X> const& host) {
        if (host.size() * sizeof(X) != bytes())
            throw std::runtime_error("DeviceBuffer::upload: host has " + std::to_string(host.size() * sizeof(X)) +
                                     " bytes, the buffer " + std::to_string(bytes()));
        QSA_CUDA(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice));
        QSA_CUDA(cudaDeviceSynchronize());
    }
    // Device -> host after a device sync (the work on the buffer is done).
    template <typename X = E>
    std::vector<X> download() const {
        std::vector<X> h(bytes() / sizeof(X));
        QSA_CUDA(cudaDeviceSynchronize());
        QSA_CUDA(cudaMemcpy(h.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
        return h;
    }
    void fillBytes(int byte) {
        QSA_CUDA(cudaMemset(ptr_, byte, bytes() > 0 ? bytes() : 1));
        QSA_CUDA(cudaDeviceSynchronize());
    }

private:
    void release() {
        if (ptr_ != nullptr)
            (void)cudaFree(ptr_); // a free after a failed run must not hide the run's error
        ptr_ = nullptr;
        n_ = 0;
    }
    E* ptr_ = nullptr;
    size_t n_ = 0;
};

// A created non-blocking stream.
class Stream {
public:
    Stream() { QSA_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
    ~Stream() { cudaStreamDestroy(s_); }
    Stream(Stream const&) = delete;
    Stream& operator=(Stream const&) = delete;
    cudaStream_t get() const { return s_; }
    void sync() const { QSA_CUDA(cudaStreamSynchronize(s_)); }

private:
    cudaStream_t s_ = nullptr;
};

} // namespace testlib
} // namespace qsa

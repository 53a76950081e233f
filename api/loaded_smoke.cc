// //api:loaded_test's consumer: calls every API function through //api:loaded (QSA_IMPL_LIB) with distinct
// arguments and prints what the fake library recorded, or the exception a call threw, one line per call.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <typeinfo>

#include "kernels/qsaIndexerRunner.h"

namespace tk = trt_edgellm::kernel;

namespace {

void print(std::string const& what, int32_t const* out, int n) {
    std::cout << what;
    for (int i = 0; i < n; ++i) {
        std::cout << " " << out[i];
    }
    std::cout << "\n";
}

template <typename F>
void call(std::string const& what, F f) {
    try {
        f();
    } catch (std::runtime_error const& e) {
        std::cout << what << " threw std::runtime_error: " << e.what() << "\n";
    } catch (std::exception const& e) {
        std::cout << what << " threw " << typeid(e).name() << ": " << e.what() << "\n";
    }
}

template <typename T>
void runners(char const* name) {
    alignas(16) int32_t out[64] = {};
    T const* q = reinterpret_cast<T const*>(out + 20);
    T const* w = reinterpret_cast<T const*>(out + 30);
    tk::QsaIndexerPoolState pool{};
    pool.numPages = 77;
    auto stream = reinterpret_cast<cudaStream_t>(uintptr_t(0x5150));
    call(std::string("prefill<") + name + ">", [&] {
        tk::runQsaIndexerPrefill<T>(out, q, nullptr, nullptr, w, nullptr, 0.25f, nullptr, 4096, 3, 65, &pool, stream);
        print(std::string("prefill<") + name + ">", out, 9);
    });
    call(std::string("decode<") + name + ">", [&] {
        tk::runQsaIndexerDecode<T>(out, q, nullptr, nullptr, nullptr, w, 0.5f, pool, out + 40, nullptr, 8192, 5, 33,
                                   stream);
        print(std::string("decode<") + name + ">", out, 10);
    });
}

} // namespace

int main() {
    call("prefill size", [] {
        size_t const bytes = tk::getQsaIndexerWorkspaceSize(2, 96);
        std::cout << "prefill size " << bytes << "\n";
    });
    call("decode size", [] {
        size_t const bytes = tk::getQsaIndexerDecodeWorkspaceSize(4, 9);
        std::cout << "decode size " << bytes << "\n";
    });
    runners<__half>("half");
    runners<__nv_bfloat16>("bf16");
    return 0;
}

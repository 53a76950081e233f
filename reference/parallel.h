// Minimal thread pool-free parallel loop for the reference: items [0, n) are handed out in chunks by an
// atomic counter to numThreads std::threads. Each worker installs the default FP environment (FpEnvGuard),
// so results never depend on the caller's. Results are independent of the thread count: every item is
// computed by one thread on its own data.
#pragma once

#include "reference/numerics.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace qsa {
namespace ref {

inline int resolveThreads(int numThreads) {
    if (numThreads > 0) {
        return numThreads;
    }
    unsigned const hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
}

template <typename F>
void parallelFor(int64_t n, int numThreads, int64_t chunk, F const& fn) {
    if (n <= 0) {
        return;
    }
    chunk = std::max<int64_t>(chunk, 1);
    int const nt = static_cast<int>(std::min<int64_t>(resolveThreads(numThreads), (n + chunk - 1) / chunk));
    std::atomic<int64_t> next{0};
    std::exception_ptr error;
    std::mutex errorMutex;
    auto worker = [&]() {
        FpEnvGuard guard;
        try {
            for (;;) {
                int64_t const begin = next.fetch_add(chunk);
                if (begin >= n) {
                    break;
                }
                int64_t const end = std::min(n, begin + chunk);
                for (int64_t i = begin; i < end; ++i) {
                    fn(i);
                }
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(errorMutex);
            if (!error) {
                error = std::current_exception();
            }
            next.store(n);
        }
    };
    if (nt <= 1) {
        worker();
    } else {
        std::vector<std::thread> threads;
        threads.reserve(nt - 1);
        for (int i = 0; i < nt - 1; ++i) {
            threads.emplace_back(worker);
        }
        worker();
        for (auto& t : threads) {
            t.join();
        }
    }
    if (error) {
        std::rethrow_exception(error);
    }
}

} // namespace ref
} // namespace qsa

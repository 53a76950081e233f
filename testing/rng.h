// THE random generator of the tests, fixtures and tools: splitmix64 with its own uniform, below, shuffle and
// choice. No std::*_distribution and no std::shuffle (their algorithms are the standard library's own), so a
// seed reproduces the same inputs with any compiler and standard library: a printed seed or reproduce= string
// regenerates its case anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

namespace qsa {
namespace testlib {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}

    // splitmix64: the next 64 random bits.
    uint64_t next() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t operator()() { return next(); }
    // The upper 32 bits of next().
    uint32_t next32() { return static_cast<uint32_t>(next() >> 32); }

    // Uniform float in [lo, hi): 24 random bits scaled, exact in FP32 before the affine map.
    float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>((next() >> 40) * 0x1p-24); }
    // Integer in [0, n), n > 0, as next() % n (the bias is below 2^-32 for the sizes of tests).
    int64_t below(int64_t n) {
        if (n <= 0)
            throw std::runtime_error("testlib::Rng::below: n must be > 0, got " + std::to_string(n));
        return static_cast<int64_t>(next() % static_cast<uint64_t>(n));
    }
    // Integer in [lo, hi], lo <= hi.
    int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
    bool coin() { return (next() >> 63) != 0; }

    // Fisher-Yates from the back.
    template <typename It>
    void shuffle(It first, It last) {
        auto const n = static_cast<int64_t>(std::distance(first, last));
        for (int64_t i = n - 1; i > 0; --i) {
            using std::swap;
            swap(first[i], first[below(i + 1)]);
        }
    }
    // One element of a non-empty container (or array) with operator[] and std::size.
    template <typename C>
    auto const& choice(C const& c) {
        return c[static_cast<size_t>(below(static_cast<int64_t>(std::size(c))))];
    }

private:
    uint64_t state_;
};

// splitmix64 of x: the first output of Rng(x) (a seed derived from x, e.g. per element or per fixture).
inline uint64_t mix(uint64_t x) {
    return Rng(x).next();
}

} // namespace testlib
} // namespace qsa

// K2 engine: tile kernel variants (AVX-512, AVX2+FMA, generic) chosen at run time. Every variant computes
// the same IEEE operations in the same order (fma is exactly rounded in each), so they agree bit for bit;
// reference_k2_test holds them against each other and against the scalar headDot/logitOf.
#include "reference/k2.h"

#include "reference/numerics.h"

#include <atomic>
#include <cfloat>
#include <stdexcept>
#include <string>

namespace qsa {
namespace ref {

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma,prefer-vector-width=512")
namespace k2avx512 {
#include "reference/k2Tile.inc"
} // namespace k2avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace k2avx2 {
#include "reference/k2Tile.inc"
} // namespace k2avx2
#pragma GCC pop_options
#endif

namespace k2generic {
#include "reference/k2Tile.inc"
} // namespace k2generic

namespace {

using TileFn = void (*)(float const*, float const*, float*);

struct Variant {
    char const* name;
    TileFn fn;
};

std::vector<Variant> supportedVariants() {
    std::vector<Variant> v;
#if defined(__x86_64__)
    __builtin_cpu_init();
    bool const fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
        v.push_back({"avx512", &k2avx512::tileKernel});
    }
    if (fma) {
        v.push_back({"avx2", &k2avx2::tileKernel});
    }
#endif
    v.push_back({"generic", &k2generic::tileKernel});
    return v;
}

std::atomic<int> gForced{-1}; // index into supportedVariants(), -1: the best

Variant pick() {
    static std::vector<Variant> const variants = supportedVariants();
    int const i = gForced.load();
    return variants[i < 0 ? 0 : i];
}

} // namespace

char const* k2Variant() {
    return pick().name;
}

std::vector<char const*> k2Variants() {
    std::vector<char const*> names;
    for (Variant const& v : supportedVariants()) {
        names.push_back(v.name);
    }
    return names;
}

void k2ForceVariant(char const* name) {
    if (name == nullptr) {
        gForced.store(-1);
        return;
    }
    std::vector<Variant> const variants = supportedVariants();
    for (size_t i = 0; i < variants.size(); ++i) {
        if (std::string(variants[i].name) == name) {
            gForced.store(static_cast<int>(i));
            return;
        }
    }
    throw std::runtime_error(std::string("k2ForceVariant: variant '") + name + "' is not supported on this CPU");
}

KbarTiles makeKbarTiles(DType dt, uint16_t const* kbar, int32_t numBlocks) {
    KbarTiles t;
    t.numBlocks = numBlocks;
    t.numTiles = (numBlocks + kTileBlocks - 1) / kTileBlocks;
    t.data.assign(static_cast<size_t>(t.numTiles) * 128 * kTileBlocks, 0.0f);
    for (int32_t g = 0; g < numBlocks; ++g) {
        int64_t const tile = g / kTileBlocks;
        int32_t const j = g % kTileBlocks;
        for (int d = 0; d < 128; ++d) {
            t.data[(tile * 128 + d) * kTileBlocks + j] = toFloat(dt, kbar[static_cast<int64_t>(g) * 128 + d]);
        }
    }
    return t;
}

void scoreRowGroup(float const* const q[], int32_t const nVis[], int nRows, KbarTiles const& tiles, int32_t outBlocks,
                   float* const out[]) {
    TileFn const fn = pick().fn;
    alignas(64) float qs[kTileRows * 512];
    int32_t maxVis = 0;
    for (int r = 0; r < kTileRows; ++r) {
        for (int e = 0; e < 512; ++e) {
            qs[r * 512 + e] = (r < nRows && nVis[r] > 0) ? q[r][e] : 0.0f;
        }
        if (r < nRows && nVis[r] > maxVis) {
            maxVis = nVis[r];
        }
    }
    int32_t const needTiles = (maxVis + kTileBlocks - 1) / kTileBlocks;
    alignas(64) float tileOut[kTileRows * kTileBlocks];
    for (int32_t tile = 0; tile < needTiles; ++tile) {
        fn(qs, tiles.data.data() + static_cast<int64_t>(tile) * 128 * kTileBlocks, tileOut);
        int32_t const g0 = tile * kTileBlocks;
        for (int r = 0; r < nRows; ++r) {
            for (int j = 0; j < kTileBlocks && g0 + j < outBlocks; ++j) {
                // Invisible entries are -FLT_MAX (their computed value is discarded, nothing is kept).
                out[r][g0 + j] = g0 + j < nVis[r] ? tileOut[r * kTileBlocks + j] : -FLT_MAX;
            }
        }
    }
    for (int r = 0; r < nRows; ++r) {
        for (int32_t g = needTiles * kTileBlocks; g < outBlocks; ++g) {
            out[r][g] = -FLT_MAX;
        }
    }
}

} // namespace ref
} // namespace qsa

// K2 engine: tile kernel variants (AVX-512, AVX2+FMA, generic) chosen at run time. Every variant computes
// the same IEEE operations in the same order (fma is exactly rounded in each), so they agree bit for bit;
// reference_k2_test holds them against each other and against the scalar headDot/logitOf.
#include "reference/k2.h"

#include "reference/numerics.h"

#include <atomic>
#include <cfloat>

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

std::atomic<bool> gForceGeneric{false};

TileFn pickTile(char const** name) {
    if (!gForceGeneric.load()) {
#if defined(__x86_64__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
            __builtin_cpu_supports("fma")) {
            *name = "avx512";
            return &k2avx512::tileKernel;
        }
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
            *name = "avx2";
            return &k2avx2::tileKernel;
        }
#endif
    }
    *name = "generic";
    return &k2generic::tileKernel;
}

} // namespace

char const* k2Variant() {
    char const* name = nullptr;
    pickTile(&name);
    return name;
}

void k2ForceGeneric(bool on) {
    gForceGeneric.store(on);
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
    char const* name = nullptr;
    TileFn const fn = pickTile(&name);
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

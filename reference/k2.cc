// K2 engine: tile kernel variants (AVX-512, AVX2+FMA, generic) chosen at run time. Every variant computes
// the same IEEE operations in the same order (fma is exactly rounded in each), so they agree bit for bit;
// reference_k2_test holds them against each other and against the scalar headDot/logitOf.
#include "reference/k2.h"

#include "reference/numerics.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <stdexcept>
#include <string>

namespace qsa {
namespace ref {

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")
namespace k2avx512 {

using Vec = __m512; // a row's 16 blocks
#define QSA_K2_OP(op) _mm512_##op

// relu: max(x, +0) returns the second operand unless x > 0 (NaN and -0.0 give +0.0). The masked form with an
// all-ones mask is the same vmaxps; its pass-through is an initialized +0 rather than the _mm512_undefined_ps()
// of the unmasked intrinsic (which GCC's -Wuninitialized reports).
inline __attribute__((always_inline)) Vec relu(Vec x) {
    Vec const zero = _mm512_setzero_ps();
    return _mm512_mask_max_ps(zero, __mmask16(0xFFFF), x, zero);
}

#include "reference/k2Simd.inc"
#undef QSA_K2_OP

} // namespace k2avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace k2avx2 {

using Vec = __m256; // blocks 0..7 or 8..15 of a row
#define QSA_K2_OP(op) _mm256_##op

inline __attribute__((always_inline)) Vec relu(Vec x) {
    return _mm256_max_ps(x, _mm256_setzero_ps()); // see k2avx512::relu
}

#include "reference/k2Simd.inc"
#undef QSA_K2_OP

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

void scoreRows(DType dt, uint16_t const* const q[], int32_t const nVis[], int nRows, KbarTiles const& tiles,
               int32_t outBlocks, float* const out[]) {
    TileFn const fn = pick().fn;
    int const numGroups = (nRows + kTileRows - 1) / kTileRows;
    // Each group of 4 rows: packed q as floats (K2 reads the T-rounded qNormed; padded rows and missing rows are
    // +0.0, their q is never read) and the number of tiles its longest row needs.
    std::vector<float> qs(static_cast<size_t>(numGroups) * kTileRows * 512, 0.0f);
    std::vector<int32_t> groupTiles(static_cast<size_t>(numGroups), 0);
    int32_t maxTiles = 0;
    for (int r = 0; r < nRows; ++r) {
        if (nVis[r] > 0) {
            std::transform(q[r], q[r] + 512, qs.begin() + static_cast<size_t>(r) * 512,
                           [dt](uint16_t x) { return toFloat(dt, x); });
        }
        int32_t const need = (nVis[r] + kTileBlocks - 1) / kTileBlocks;
        groupTiles[r / kTileRows] = std::max(groupTiles[r / kTileRows], need);
        maxTiles = std::max(maxTiles, need);
    }
    alignas(64) float tileOut[kTileRows * kTileBlocks];
    // Tile-major: a tile (8 KB) is loaded once for every group of the panel.
    for (int32_t tile = 0; tile < maxTiles; ++tile) {
        float const* kT = tiles.data.data() + static_cast<int64_t>(tile) * 128 * kTileBlocks;
        int32_t const g0 = tile * kTileBlocks;
        for (int gi = 0; gi < numGroups; ++gi) {
            if (tile >= groupTiles[gi]) {
                continue;
            }
            fn(qs.data() + static_cast<size_t>(gi) * kTileRows * 512, kT, tileOut);
            for (int i = 0; i < kTileRows && gi * kTileRows + i < nRows; ++i) {
                int const r = gi * kTileRows + i;
                for (int j = 0; j < kTileBlocks && g0 + j < outBlocks; ++j) {
                    // Invisible entries are -FLT_MAX (their computed value is discarded).
                    out[r][g0 + j] = g0 + j < nVis[r] ? tileOut[i * kTileBlocks + j] : -FLT_MAX;
                }
            }
        }
    }
    for (int r = 0; r < nRows; ++r) {
        for (int32_t g = std::min(groupTiles[r / kTileRows] * kTileBlocks, outBlocks); g < outBlocks; ++g) {
            out[r][g] = -FLT_MAX;
        }
    }
}

} // namespace ref
} // namespace qsa

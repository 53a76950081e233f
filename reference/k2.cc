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
// The butterfly as lane 0 sees it is a tree: S(m, l) = S(2m, l) + S(2m, l + m) for m = 1, 2, 4, 8, 16,
// S(32, l) = partial[l] (the fma chain of lane l); the answer is S(1, 0). Round m of the contract keeps lanes
// l < m of p[l] = p[l] + p[l ^ m], exactly this recursion. Evaluated depth first, the tree stays in registers.

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")
namespace k2avx512 {

// 4 rows x 16 blocks (one zmm per row). out[r] = S(M, L) of head q[r] for the 16 blocks of the tile.
template <int M, int L>
inline __attribute__((always_inline)) void node(float const* const* q, float const* kT, __m512* out) {
    if constexpr (M == 32) {
        __m512 acc[kTileRows];
        for (int r = 0; r < kTileRows; ++r) {
            acc[r] = _mm512_setzero_ps(); // partial[l] = +0.0
        }
        for (int i = 0; i < 4; ++i) { // partial[l] = fma(q[l + 32i], kbar[l + 32i], partial[l])
            __m512 const k = _mm512_loadu_ps(kT + (L + 32 * i) * kTileBlocks);
            for (int r = 0; r < kTileRows; ++r) {
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][L + 32 * i]), k, acc[r]);
            }
        }
        for (int r = 0; r < kTileRows; ++r) {
            out[r] = acc[r];
        }
    } else {
        __m512 a[kTileRows];
        __m512 b[kTileRows];
        node<2 * M, L>(q, kT, a);
        node<2 * M, L + M>(q, kT, b);
        for (int r = 0; r < kTileRows; ++r) {
            out[r] = _mm512_add_ps(a[r], b[r]);
        }
    }
}

void tileKernel(float const* __restrict q, float const* __restrict kT, float* __restrict out) {
    __m512 logit[kTileRows];
    for (int h = 0; h < 4; ++h) {
        float const* qh[kTileRows];
        for (int r = 0; r < kTileRows; ++r) {
            qh[r] = q + r * 512 + h * 128;
        }
        __m512 dot[kTileRows];
        node<1, 0>(qh, kT, dot);
        for (int r = 0; r < kTileRows; ++r) {
            // relu: max(x, +0) returns the second operand unless x > 0 (NaN and -0.0 give +0.0). The masked form
            // with an all-ones mask is the same vmaxps; its pass-through is an initialized +0 rather than the
            // _mm512_undefined_ps() of the unmasked intrinsic (which GCC's -Wuninitialized reports).
            __m512 const zero = _mm512_setzero_ps();
            __m512 const rl = _mm512_mask_max_ps(zero, __mmask16(0xFFFF), dot[r], zero);
            logit[r] = h == 0 ? rl : _mm512_add_ps(logit[r], rl); // ((r0 + r1) + r2) + r3
        }
    }
    __m512 const scale = _mm512_set1_ps(__builtin_bit_cast(float, 0x3DB504F3u));
    for (int r = 0; r < kTileRows; ++r) {
        _mm512_storeu_ps(out + r * kTileBlocks, _mm512_mul_ps(logit[r], scale));
    }
}

} // namespace k2avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace k2avx2 {

// 4 rows x 16 blocks: two ymm per row, out[2r + v] covers blocks 8v .. 8v + 7.
template <int M, int L>
inline __attribute__((always_inline)) void node(float const* const* q, float const* kT, __m256* out) {
    constexpr int kN = 2 * kTileRows;
    if constexpr (M == 32) {
        __m256 acc[kN];
        for (int n = 0; n < kN; ++n) {
            acc[n] = _mm256_setzero_ps();
        }
        for (int i = 0; i < 4; ++i) {
            __m256 const k0 = _mm256_loadu_ps(kT + (L + 32 * i) * kTileBlocks);
            __m256 const k1 = _mm256_loadu_ps(kT + (L + 32 * i) * kTileBlocks + 8);
            for (int r = 0; r < kTileRows; ++r) {
                __m256 const qb = _mm256_broadcast_ss(q[r] + L + 32 * i);
                acc[2 * r] = _mm256_fmadd_ps(qb, k0, acc[2 * r]);
                acc[2 * r + 1] = _mm256_fmadd_ps(qb, k1, acc[2 * r + 1]);
            }
        }
        for (int n = 0; n < kN; ++n) {
            out[n] = acc[n];
        }
    } else {
        __m256 a[kN];
        __m256 b[kN];
        node<2 * M, L>(q, kT, a);
        node<2 * M, L + M>(q, kT, b);
        for (int n = 0; n < kN; ++n) {
            out[n] = _mm256_add_ps(a[n], b[n]);
        }
    }
}

void tileKernel(float const* __restrict q, float const* __restrict kT, float* __restrict out) {
    constexpr int kN = 2 * kTileRows;
    __m256 logit[kN];
    for (int h = 0; h < 4; ++h) {
        float const* qh[kTileRows];
        for (int r = 0; r < kTileRows; ++r) {
            qh[r] = q + r * 512 + h * 128;
        }
        __m256 dot[kN];
        node<1, 0>(qh, kT, dot);
        for (int n = 0; n < kN; ++n) {
            __m256 const rl = _mm256_max_ps(dot[n], _mm256_setzero_ps()); // relu, see above
            logit[n] = h == 0 ? rl : _mm256_add_ps(logit[n], rl);
        }
    }
    __m256 const scale = _mm256_set1_ps(__builtin_bit_cast(float, 0x3DB504F3u));
    for (int n = 0; n < kN; ++n) {
        _mm256_storeu_ps(out + n * 8, _mm256_mul_ps(logit[n], scale));
    }
}

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

void scoreRows(float const* const q[], int32_t const nVis[], int nRows, KbarTiles const& tiles, int32_t outBlocks,
               float* const out[]) {
    TileFn const fn = pick().fn;
    int const numGroups = (nRows + kTileRows - 1) / kTileRows;
    // Each group of 4 rows: packed q (padded rows and missing rows are +0.0, their q is never read) and the
    // number of tiles its longest row needs.
    std::vector<float> qs(static_cast<size_t>(numGroups) * kTileRows * 512, 0.0f);
    std::vector<int32_t> groupTiles(static_cast<size_t>(numGroups), 0);
    int32_t maxTiles = 0;
    for (int r = 0; r < nRows; ++r) {
        if (nVis[r] > 0) {
            std::copy(q[r], q[r] + 512, qs.begin() + static_cast<size_t>(r) * 512);
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

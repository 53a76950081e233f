// Shared helpers of the GPU tests; see test_helper.h.
#include "kernels/test_helper.h"

#include <cmath>

namespace qsa {
namespace ktest {

char const* dtName(DType dt) {
    return dt == DType::kHalf ? "half" : "bf16";
}

// Special patterns of T.
static uint16_t tPosInf(DType dt) {
    return dt == DType::kHalf ? 0x7C00 : 0x7F80;
}
static uint16_t tNegInf(DType dt) {
    return dt == DType::kHalf ? 0xFC00 : 0xFF80;
}
static uint16_t tMaxFinite(DType dt) {
    return dt == DType::kHalf ? 0x7BFF : 0x7F7F;
}
uint16_t tNaN(DType dt, int variant) {
    static uint16_t const h[] = {0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0xFD55};
    static uint16_t const b[] = {0x7FC0, 0xFFC0, 0x7F81, 0x7FFF, 0xFFAA};
    int i = ((variant % 5) + 5) % 5;
    return dt == DType::kHalf ? h[i] : b[i];
}

char const* modeName(Mode m) {
    static char const* const names[] = {"normal", "lowEntropy", "wide", "special", "positive"};
    static_assert(std::size(names) == size_t(Mode::kPositive) + 1, "one name per Mode, in declaration order");
    return enumName(m, names);
}

char const* gammaName(Gamma g) {
    static char const* const names[] = {"small", "extreme", "special"};
    static_assert(std::size(names) == size_t(Gamma::kSpecial) + 1, "one name per Gamma, in declaration order");
    return enumName(g, names);
}

static float randomValue(Mode m, Rng& rng) {
    switch (m) {
    case Mode::kNormal:
    case Mode::kSpecial: // its special values are drawn by randomT
        return rng.uniform(-2.0f, 2.0f);
    case Mode::kPositive:
        return rng.uniform(0.0f, 1.0f);
    case Mode::kLowEntropy: {
        static float const v[] = {0.0f, 0.5f, 1.0f, -1.0f};
        return v[rng() % 4];
    }
    case Mode::kWide: {
        int e = static_cast<int>(rng() % 37) - 24;
        float mant = rng.uniform(1.0f, 2.0f);
        float v = std::ldexp(mant, e);
        return (rng() & 1) ? -v : v;
    }
    }
    return 0.0f;
}

std::vector<uint16_t> randomT(DType dt, size_t n, Mode m, Rng& rng) {
    // kSpecial's patterns: +-inf, a NaN (index 2, its variant drawn), +-0, the smallest subnormal, +-max finite.
    uint16_t const special[] = {tPosInf(dt),
                                tNegInf(dt),
                                0,
                                0x0000,
                                0x8000,
                                0x0001,
                                tMaxFinite(dt),
                                static_cast<uint16_t>(0x8000 | tMaxFinite(dt))};
    std::vector<uint16_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        if (m == Mode::kSpecial && rng() % 32 == 0) {
            uint64_t const k = rng() % 8;
            v[i] = k == 2 ? tNaN(dt, static_cast<int>(rng() % 5)) : special[k];
            continue;
        }
        v[i] = ref::fromFloat(dt, randomValue(m, rng));
    }
    return v;
}

std::vector<uint16_t> makeGamma(DType dt, Gamma g, Rng& rng) {
    // kExtreme's patterns: +-max finite and -1 (1 + w == 0).
    uint16_t const extreme[] = {tMaxFinite(dt), static_cast<uint16_t>(0x8000 | tMaxFinite(dt)),
                                ref::fromFloat(dt, -1.0f)};
    std::vector<uint16_t> w(ref::kHeadDim);
    for (auto& x : w) {
        x = ref::fromFloat(dt, rng.uniform(-0.5f, 0.5f));
        if (g == Gamma::kExtreme) {
            uint64_t const k = rng() % 4;
            if (k < 3)
                x = extreme[k];
        } else if (g == Gamma::kSpecial && rng() % 8 == 0) {
            uint64_t const k = rng() % 3;
            x = k == 0 ? tPosInf(dt) : (k == 1 ? tNegInf(dt) : tNaN(dt, static_cast<int>(rng() % 5)));
        }
    }
    return w;
}

void poisonPaddedRows(DType dt, std::vector<uint16_t>& qk, int32_t B, int32_t S, std::vector<int32_t> const& ctx) {
    for (int32_t b = 0; b < B; ++b) {
        int32_t c = std::min(std::max(ctx[b], 0), S);
        for (int32_t t = c; t < S; ++t) {
            uint16_t* row = &qk[(size_t(b) * S + t) * ref::kQkWidth];
            for (int j = 0; j < ref::kQkWidth; ++j) {
                row[j] = (j % 3 == 0) ? tNaN(dt, j) : (j % 3 == 1 ? tPosInf(dt) : tNegInf(dt));
            }
        }
    }
}

ref::HostPool makeHostPool(DType dt, int32_t B, ref::PoolDims dims, Pages pages, Rng& rng) {
    ref::HostPool h;
    h.dims = dims;
    int32_t const P = dims.maxPagesPerSeq;
    if (int64_t(B) * P > dims.numPages)
        throw std::runtime_error("makeHostPool: numPages < B * maxPagesPerSeq");
    std::vector<int32_t> kIds(dims.numPages), vIds(dims.numPages);
    std::iota(kIds.begin(), kIds.end(), 0);
    std::iota(vIds.begin(), vIds.end(), dims.numPages);
    rng.shuffle(kIds.begin(), kIds.end());
    rng.shuffle(vIds.begin(), vIds.end());
    h.pageTable.assign(size_t(B) * 2 * P, -1);
    for (int32_t b = 0; b < B; ++b) {
        for (int32_t s = 0; s < P; ++s) {
            int32_t& k = h.pageTable[(size_t(b) * 2 + 0) * P + s];
            int32_t& v = h.pageTable[(size_t(b) * 2 + 1) * P + s];
            k = kIds[size_t(b) * P + s];
            v = vIds[size_t(b) * P + s];
            if (pages == Pages::kHoles && rng() % 5 == 0) {
                // Slots never dereferenced (contract section 3): -1, the other plane, out of range.
                int32_t const bad[] = {-1, v, 2 * dims.numPages + int32_t(rng() % 7), -2};
                k = bad[rng() % 4];
            }
            if (pages == Pages::kHoles && rng() % 5 == 0) {
                int32_t const bad[] = {-1, kIds[size_t(b) * P + s], 2 * dims.numPages + int32_t(rng() % 7), -3};
                v = bad[rng() % 4];
            }
        }
    }
    size_t n = size_t(2) * dims.numPages * ref::kTokensPerPage * dims.numKVHeads * dims.poolHeadDim;
    h.data = randomT(dt, n, Mode::kSpecial, rng);
    return h;
}

ref::PoolView viewOf(ref::HostPool& h) {
    return ref::PoolView{h.data.data(), h.pageTable.data(), h.dims};
}

std::string poolParams(ref::PoolDims const& d) {
    return params("pool{numPages=", d.numPages, " maxPagesPerSeq=", d.maxPagesPerSeq, " numKVHeads=", d.numKVHeads,
                  " poolHeadDim=", d.poolHeadDim, " headSize=", d.headSize, "}");
}

void expectThrows(std::string const& label, std::function<void()> const& fn, std::vector<std::string> const& words) {
    SCOPED_TRACE(label);
    try {
        fn();
    } catch (std::runtime_error const& e) {
        std::string msg = e.what();
        for (auto const& s : words)
            EXPECT_NE(msg.find(s), std::string::npos) << "message lacks '" << s << "': " << msg;
        return;
    } catch (std::exception const& e) {
        ADD_FAILURE() << "threw a non-runtime_error: " << e.what();
        return;
    }
    ADD_FAILURE() << "did not throw";
}

std::string specStr(DType dt, PrefillSpec const& s) {
    return params(dtName(dt), " B=", s.B, " S=", s.S, " ctx=", ctxStr(s.ctx), " qk=", modeName(s.qk),
                  " gamma=", gammaName(s.gamma), " poison=", s.poison, " rmsEps=", s.rmsEps, " seed=", s.seed);
}

ref::PrefillCase makePrefillCase(DType dt, PrefillSpec const& s) {
    Rng rng(s.seed);
    ref::PrefillCase c;
    c.dtype = dt;
    c.batchSize = s.B;
    c.seqLen = s.S;
    c.indexQk = randomT(dt, size_t(s.B) * s.S * ref::kQkWidth, s.qk, rng);
    if (s.poison)
        poisonPaddedRows(dt, c.indexQk, s.B, s.S, s.ctx);
    c.cosSin = makeCosSin(s.S);
    c.contextLengths = s.ctx;
    c.wQ = makeGamma(dt, s.gamma, rng);
    c.wK = makeGamma(dt, s.gamma, rng);
    c.rmsEps = s.rmsEps;
    return c;
}

} // namespace ktest
} // namespace qsa

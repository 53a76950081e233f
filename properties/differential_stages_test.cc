// Contract 7.1 at stage level (GPU only; links //kernels:qsa_kernels directly, not //api:impl):
// each launcher of kernels/qsaIndexerKernels.h equals its host mirror in reference/stages.h bit for bit on
// generated inputs, including host-written logits drawn from a few distinct values (+inf, -FLT_MAX, -0.0,
// NaN) for the sort and B3 select; and the prefill workspace size equals section 6 with CUB's own query.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstring>
#include <stdexcept>

#include "kernels/qsaIndexerKernels.h"
#include "kernels/test_cub_query.h"
#include "properties/prop.h"
#include "properties/ttypes.h"
#include "reference/stages.h"

namespace qsa {
namespace prop {
namespace {

namespace kn = trt_edgellm::kernel;

template <typename T>
struct Tag {
    using type = T;
};

template <typename E>
class Dev {
public:
    explicit Dev(size_t n) : n_(n) {
        if (cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(E)) != cudaSuccess)
            throw std::runtime_error("cudaMalloc");
    }
    explicit Dev(std::vector<E> const& h) : Dev(h.size()) {
        cudaMemcpy(p_, h.data(), h.size() * sizeof(E), cudaMemcpyHostToDevice);
    }
    ~Dev() { cudaFree(p_); }
    E* get() const { return static_cast<E*>(p_); }
    std::vector<E> host() const {
        std::vector<E> v(n_);
        if (cudaDeviceSynchronize() != cudaSuccess)
            throw std::runtime_error("stage kernel failed");
        cudaMemcpy(v.data(), p_, n_ * sizeof(E), cudaMemcpyDeviceToHost);
        return v;
    }

private:
    void* p_ = nullptr;
    size_t n_;
};

float bitsToFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Logit rows drawn from a few distinct values, special ones included (host-written, contract section 4).
rc::Gen<std::vector<float>> genLogits(size_t n, bool hostSpecials) {
    std::vector<std::pair<size_t, float>> values = {{4, 0.0f},     {3, 1.5f},     {3, 0.25f},
                                                    {2, INFINITY}, {2, -FLT_MAX}, {2, 7.0f}};
    if (hostSpecials) {
        values.push_back({2, -0.0f});
        values.push_back({1, bitsToFloat(0x7FC00000u)});
        values.push_back({1, bitsToFloat(0xFFC00001u)});
        values.push_back({1, -3.0f});
    }
    return rc::gen::container<std::vector<float>>(n, weighted<float>(values));
}

std::vector<uint32_t> bitsOf(std::vector<float> const& v) {
    std::vector<uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * 4);
    return b;
}

QSA_PROP(Stages, SortMatchesReference, 60) {
    int32_t const rows = *rc::gen::inRange<int32_t>(1, 9);
    int32_t const MB = *weighted<int32_t>({{3, 5}, {2, 1}, {2, 64}, {1, 513}, {1, 2048}});
    std::vector<float> const keys = *genLogits(size_t(rows) * MB, true);
    std::vector<int32_t> ids(keys.size());
    ref::idsFill(ids.data(), rows, MB);
    std::vector<float> wantK(keys.size());
    std::vector<int32_t> wantV(keys.size());
    ref::sortRows(keys.data(), wantK.data(), ids.data(), wantV.data(), rows, MB);
    size_t const temp = kn::getQsaSortTempBytes(rows, MB);
    Dev<float> dk(keys), dko(keys.size());
    Dev<int32_t> dv(ids), dvo(ids.size());
    Dev<char> dt(temp);
    kn::launchQsaSortRows(dk.get(), dko.get(), dv.get(), dvo.get(), rows, MB, dt.get(), temp, nullptr);
    RC_ASSERT(dvo.host() == wantV);
    RC_ASSERT(bitsOf(dko.host()) == bitsOf(wantK));
}

QSA_PROP(Stages, DecodeSelectMatchesReference, 60) {
    int32_t const B = *rc::gen::inRange<int32_t>(1, 5);
    int32_t const maxBlocks = *weighted<int32_t>({{2, 8}, {2, 520}, {1, 600}, {1, 2100}});
    std::vector<int32_t> ctx;
    // Uniform, or next to the floor edge (contract section 5): 4 * maxBlocks + 0..3 valid, + 4..7 invalid.
    for (int32_t b = 0; b < B; ++b) {
        ctx.push_back(*rc::gen::arbitrary<bool>() ? *rc::gen::inRange<int32_t>(-1, 4 * maxBlocks + 8)
                                                  : 4 * maxBlocks + *rc::gen::inRange<int32_t>(0, 8));
    }
    bool const specials = *rc::gen::arbitrary<bool>();
    std::vector<float> const logits = *genLogits(size_t(B) * maxBlocks, specials);
    std::vector<int32_t> want(size_t(B) * ref::kIndexWidth);
    ref::decodeSelect(want.data(), logits.data(), ctx.data(), B, maxBlocks);
    Dev<float> dl(logits);
    Dev<int32_t> dc(ctx), dout(want.size());
    kn::launchQsaDecodeSelect(dout.get(), dl.get(), dc.get(), B, maxBlocks, nullptr);
    QSA_REQUIRE_EMPTY(diffOutIdx(dout.host(), want, 1, "B3 select vs reference"));
}

QSA_PROP(Stages, PrefillStagesMatchReference, 40) {
    SpecOptions o;
    o.tieBias = *rc::gen::arbitrary<bool>();
    PrefillSpec const spec = *genPrefillSpec(o);
    ref::PrefillCase const c = toCase(spec);
    RC_LOG() << describe(spec) << "\n";
    RC_PRE(int64_t(c.batchSize) * c.seqLen * ((c.seqLen + 3) / 4) <= (int64_t(1) << 22));
    int32_t const B = c.batchSize, S = c.seqLen, MB = (S + 3) / 4;
    ref::DType const dt = c.dtype;
    std::vector<uint16_t> q(size_t(B) * S * 512), kbar(size_t(B) * MB * 128);
    ref::qPrep(dt, q.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wQ.data(), c.rmsEps, B, S);
    ref::kCompress(dt, kbar.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wK.data(), c.rmsEps,
                   B, S, MB, 0, MB, 0);
    std::vector<float> logits(size_t(B) * S * MB);
    ref::scores(dt, logits.data(), q.data(), kbar.data(), c.contextLengths.data(), B, S, 0, B * S);
    Dev<uint16_t> dqk(c.indexQk), dwq(c.wQ), dwk(c.wK), dq(q.size()), dk(kbar.size());
    Dev<float> dcs(c.cosSin), dl(logits.size());
    Dev<int32_t> dctx(c.contextLengths);
    auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        kn::launchQsaQPrep<T>(reinterpret_cast<T*>(dq.get()), reinterpret_cast<T const*>(dqk.get()), dcs.get(),
                              dctx.get(), reinterpret_cast<T const*>(dwq.get()), c.rmsEps, B, S, nullptr);
        kn::launchQsaKCompress<T>(reinterpret_cast<T*>(dk.get()), reinterpret_cast<T const*>(dqk.get()), dcs.get(),
                                  dctx.get(), reinterpret_cast<T const*>(dwk.get()), c.rmsEps, B, S, MB, 0, MB, 0,
                                  nullptr);
    };
    if (dt == ref::DType::kHalf) {
        run(Tag<__half>{});
    } else {
        run(Tag<__nv_bfloat16>{});
    }
    RC_ASSERT(dq.host() == q);
    RC_ASSERT(dk.host() == kbar);
    // K2 on the reference's own qNormed / kbar, so that a K2 bug is told apart from a K1 bug.
    Dev<uint16_t> rq(q), rk(kbar);
    if (dt == ref::DType::kHalf) {
        kn::launchQsaScores<__half>(dl.get(), reinterpret_cast<__half const*>(rq.get()),
                                    reinterpret_cast<__half const*>(rk.get()), dctx.get(), B, S, 0, B * S, nullptr);
    } else {
        kn::launchQsaScores<__nv_bfloat16>(dl.get(), reinterpret_cast<__nv_bfloat16 const*>(rq.get()),
                                           reinterpret_cast<__nv_bfloat16 const*>(rk.get()), dctx.get(), B, S, 0, B * S,
                                           nullptr);
    }
    RC_ASSERT(bitsOf(dl.host()) == bitsOf(logits));
}

QSA_PROP(Stages, WorkspaceSizeIsExact, 200) {
    int32_t const B = *rc::gen::inRange<int32_t>(1, 33);
    int32_t const S = *weightedGen<int32_t>(
        {{3, rc::gen::inRange<int32_t>(1, 9000)}, {1, pick<int32_t>(1, 2048, 2049, 4096, 8192, 16384)}});
    int32_t const MB = (S + 3) / 4;
    int64_t const rc = ref::prefillChunkRows(B, S);
    // The runner sorts each chunk over a DoubleBuffer (contract section 5); its CUB slot is sized by that
    // query, not by getQsaSortTempBytes (the stand-alone sort launcher keeps its inputs: another CUB call).
    size_t const want = ref::prefillWorkspaceBytes(B, S, ktest::cubDoubleBufferSortQuery(int32_t(rc), MB));
    RC_LOG() << "B=" << B << " S=" << S << " Rc=" << rc << "\n";
    RC_ASSERT(kn::getQsaIndexerWorkspaceSize(B, S) == want);
}

} // namespace
} // namespace prop
} // namespace qsa

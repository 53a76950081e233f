// Regression properties from mutation testing (tools/mutants/README.md). The pipeline properties
// compare outIdx and the pool only, so a rounding-order change inside K1a, K1b or K2 that moves a value
// by one ulp (mutants 1, 8, 14, 15) or a logit that no pipeline reads (mutant 16) stays invisible to them.
// Contract 7.1 asks every STAGE to equal the reference bit for bit: these properties run the public
// per-stage launchers (kernels/qsaIndexerKernels.h, contract section 2) on generated cases and compare
// qNormed, kbar and the logits with reference/stages.h. Raw k can be replaced by random finite T bit
// patterns (magnitudes mixed inside a block, so the FP32 block sums round: mutant 8).
// GPU only: the implementation under test is //api:impl.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "kernels/qsaIndexerKernels.h"
#include "properties/prop.h"
#include "reference/stages.h"

namespace qsa {
namespace prop {
namespace {

namespace kn = trt_edgellm::kernel;

void check(cudaError_t e, char const* what) {
    if (e != cudaSuccess)
        throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

template <typename E>
struct Dev {
    E* p = nullptr;
    size_t n = 0;
    explicit Dev(std::vector<E> const& h) : n(h.size()) {
        check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(E)), "cudaMalloc");
        if (n)
            check(cudaMemcpy(p, h.data(), n * sizeof(E), cudaMemcpyHostToDevice), "upload");
    }
    explicit Dev(size_t count, uint8_t fill) : n(count) {
        check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(E)), "cudaMalloc");
        check(cudaMemset(p, fill, std::max<size_t>(n, 1) * sizeof(E)), "memset");
    }
    ~Dev() { cudaFree(p); }
    std::vector<E> get() const {
        std::vector<E> h(n);
        check(cudaDeviceSynchronize(), "sync");
        if (n)
            check(cudaMemcpy(h.data(), p, n * sizeof(E), cudaMemcpyDeviceToHost), "download");
        return h;
    }
};

template <typename E>
std::string firstDiff(std::vector<E> const& got, std::vector<E> const& want, size_t rowLen, char const* what) {
    for (size_t i = 0; i < want.size(); ++i) {
        uint64_t a = 0, b = 0;
        std::memcpy(&a, &got[i], sizeof(E));
        std::memcpy(&b, &want[i], sizeof(E));
        if (a != b) {
            std::ostringstream os;
            os << what << ": first difference at row " << i / rowLen << " col " << i % rowLen << ": got 0x" << std::hex
               << a << " want 0x" << b;
            return os.str();
        }
    }
    return "";
}

// Replaces raw k (columns [512, 640)) of every row by random finite T bit patterns.
void mixedMagnitudeRawK(ref::PrefillCase& c, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    int const expShift = c.dtype == ref::DType::kHalf ? 10 : 7;
    uint16_t const expMask = c.dtype == ref::DType::kHalf ? 0x1F : 0xFF;
    for (size_t r = 0; r < c.indexQk.size() / 640; ++r) {
        for (int d = 512; d < 640; ++d) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            uint16_t v = static_cast<uint16_t>(s >> 21);
            if (((v >> expShift) & expMask) == expMask)
                v = static_cast<uint16_t>(v & ~(1u << expShift)); // no Inf / NaN
            c.indexQk[r * 640 + d] = v;
        }
    }
}

template <typename T>
std::string stagesVsReference(ref::PrefillCase const& c, int64_t r0, int64_t r1) {
    int32_t const B = c.batchSize, S = c.seqLen, MB = (S + 3) / 4;
    size_t const rows = size_t(B) * S;
    Dev<uint16_t> qk(c.indexQk), wQ(c.wQ), wK(c.wK);
    Dev<float> cs(c.cosSin);
    Dev<int32_t> ctx(c.contextLengths);
    // K1a
    std::vector<uint16_t> qRef(rows * 512);
    ref::qPrep(c.dtype, qRef.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wQ.data(), c.rmsEps,
               B, S);
    Dev<uint16_t> q(rows * 512, 0xA5);
    kn::launchQsaQPrep<T>(reinterpret_cast<T*>(q.p), reinterpret_cast<T const*>(qk.p), cs.p, ctx.p,
                          reinterpret_cast<T const*>(wQ.p), c.rmsEps, B, S, nullptr);
    std::string m = firstDiff(q.get(), qRef, 512, "K1a qNormed [row = (b*S + t), col = 128 h + d]");
    if (!m.empty())
        return m;
    // K1b
    std::vector<uint16_t> kRef(size_t(B) * MB * 128);
    ref::kCompress(c.dtype, kRef.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wK.data(),
                   c.rmsEps, B, S, MB, 0, MB, 0);
    Dev<uint16_t> kb(size_t(B) * MB * 128, 0x5A);
    kn::launchQsaKCompress<T>(reinterpret_cast<T*>(kb.p), reinterpret_cast<T const*>(qk.p), cs.p, ctx.p,
                              reinterpret_cast<T const*>(wK.p), c.rmsEps, B, S, MB, 0, MB, 0, nullptr);
    m = firstDiff(kb.get(), kRef, 128, "K1b kbar [row = b*MB + g]");
    if (!m.empty())
        return m;
    // K2 on rows [r0, r1), from the reference's stored qNormed / kbar (stages consume inputs as stored).
    size_t const n = size_t(r1 - r0) * MB;
    std::vector<float> lRef(n);
    ref::scores(c.dtype, lRef.data(), qRef.data(), kRef.data(), c.contextLengths.data(), B, S, int32_t(r0),
                int32_t(r1));
    Dev<uint16_t> qIn(qRef), kIn(kRef);
    Dev<float> l(n, 0x7F);
    kn::launchQsaScores<T>(l.p, reinterpret_cast<T const*>(qIn.p), reinterpret_cast<T const*>(kIn.p), ctx.p, B, S,
                           int32_t(r0), int32_t(r1), nullptr);
    return firstDiff(l.get(), lRef, size_t(MB), "K2 logits [row = r - rowBegin, col = g]");
}

QSA_PROP(MutantRegressions, PrefillStagesMatchReferenceBitwise, 40) {
    SpecOptions o;
    o.tieBias = *rc::gen::arbitrary<bool>();
    PrefillSpec spec = *genPrefillSpec(o);
    if (int64_t(spec.B) * spec.S > 4096) { // keep the CPU reference of three stages cheap: one sequence
        spec.B = 1;
        spec.S = std::min(spec.S, 4096);
        spec.ctx.resize(1);
        spec.ctx[0] = std::min(spec.ctx[0], spec.S);
    }
    bool const mixed = *rc::gen::arbitrary<bool>();
    ref::PrefillCase c = toCase(spec);
    if (mixed)
        mixedMagnitudeRawK(c, spec.act.seed);
    int64_t const rows = int64_t(c.batchSize) * c.seqLen;
    int64_t const r0 = *rc::gen::inRange<int64_t>(0, rows);
    int64_t const r1 = std::min(rows, r0 + *rc::gen::inRange<int64_t>(1, 513));
    Capture cap("mutant-regressions", describe(spec) + (mixed ? " rawK=mixed-magnitude" : ""));
    cap.add(c);
    RC_TAG(mixed ? "mixed-magnitude raw k" : "generated raw k");
    std::string const m = c.dtype == ref::DType::kHalf ? stagesVsReference<__half>(c, r0, r1)
                                                       : stagesVsReference<__nv_bfloat16>(c, r0, r1);
    QSA_REQUIRE_EMPTY(m.empty() ? m : m + " (K2 rows [" + std::to_string(r0) + ", " + std::to_string(r1) + "))");
}

} // namespace
} // namespace prop
} // namespace qsa

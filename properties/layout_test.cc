// Contract 7.2 (index layout): every output row obeys section 4's K4 consequences: groups 4g..4g+3 of
// distinct visible blocks, kSel = min(512, nVis) of them, the causal tail 4 nVis + j for j < (t + 1) % 4,
// then -1 to width 2051; entries distinct and in [0, t]; decode rows emit blocks in ascending id.
#include "properties/cases.h"
#include "reference/rowops.h"

namespace qsa {
namespace prop {
namespace {

std::string prefillLayout(ref::PrefillCase const& c, std::vector<int32_t> const& out) {
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = ref::caseCtx(c, b);
        for (int32_t t = 0; t < c.seqLen; ++t) {
            std::string m = rowLayoutViolation(&out[(size_t(b) * c.seqLen + t) * ref::kIndexWidth], t, t < ctx, false);
            if (!m.empty())
                return "row b=" + std::to_string(b) + ": " + m;
        }
    }
    return "";
}

QSA_PROP(Layout, PrefillRowsObeyK4, 100) {
    SpecOptions o;
    o.tieBias = *pick(false, true);
    o.pool = *weighted<bool>({{3, false}, {1, true}});
    PrefillSpec const spec = *genPrefillSpec(o);
    ref::PrefillCase const c = toCase(spec);
    coverPrefill(prefillRegions(c), nVisFloor(), 0.0);
    Capture cap("layout", describe(spec), c);
    QSA_REQUIRE_EMPTY(prefillLayout(c, runImplPrefill(c).outIdx));
}

QSA_PROP(Layout, DecodeRowsObeyK4, 50) {
    DecodeChainSpec const spec = *genDecodeChainSpec(implOnGpu() ? 2100 : 600, 5, true, false);
    walkDecodeChain(spec, "layout", nVisFloor(), [&](ref::DecodeCase& d, size_t) {
        DecodeOut const got = runImplDecode(d);
        for (int32_t b = 0; b < d.batchSize; ++b) {
            std::string m =
                rowLayoutViolation(&got.outIdx[size_t(b) * ref::kIndexWidth], d.contextLengths[b] - 1, true, true);
            if (!m.empty())
                RC_FAIL("decode row b=" + std::to_string(b) + ": " + m);
        }
        return got.pool;
    });
}

} // namespace
} // namespace prop
} // namespace qsa

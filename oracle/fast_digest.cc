// Digests of everything a fixed prefill + decode chain makes observable through the public API (outIdx, pool,
// and the section 6 workspace stage slots), for whichever oracle copy is linked in. fast_plants_test.sh
// compares the digests of //oracle:oracle, //oracle:oracle_fast and each oracle_fast_plant<n>: the fast copy
// must differ from the ieee one (its arithmetic is really another one), each plant from the fast copy (the plant
// is compiled in and changes outputs), on the stages the plant touches.
// Output: one line per observable, "<name> <fnv1a-64 of its bytes>".
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "properties/cases.h"

namespace {

template <typename T>
uint64_t fnv(std::vector<T> const& v) {
    uint64_t h = 1469598103934665603ull;
    auto const* p = reinterpret_cast<unsigned char const*>(v.data());
    for (size_t i = 0; i < v.size() * sizeof(T); ++i)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

template <typename T>
void line(std::string const& name, std::vector<T> const& v) {
    std::printf("%s %016llx\n", name.c_str(), static_cast<unsigned long long>(fnv(v)));
}

} // namespace

int main() {
    using namespace qsa::prop;
    // Four sequences, the first of 262 tokens (3 pages, nVis 65: blocks past token 128 on the second and third
    // page), then 8 decode steps (B1 block completions included; 32 decode rows, so that B1's T-rounded output
    // shows the fast arithmetic: its differences are ~2^-21 relative, a half ulp is 2^-11), real rope.
    DecodeChainSpec spec;
    spec.B = 4;
    spec.L = {262, 133, 57, 4};
    spec.steps = 8;
    spec.act.seed = 7;
    spec.pool.seed = 11;
    Chain ch = makeChain(spec);
    RunOptions o;
    o.readStages = true;
    PrefillOut const full = runImplPrefill(ch.prefillFull, o);
    line("prefill.K1a.qNormed", full.qNormed);
    line("prefill.K1b.kbar", full.kbar);
    line("prefill.outIdx", full.outIdx);
    line("prefill.pool", full.pool);
    std::vector<uint16_t> pool = runImplPrefill(ch.prefillL).pool;
    std::vector<uint16_t> q, poolAfter;
    std::vector<float> logits;
    std::vector<int32_t> outIdx;
    for (auto& d : ch.steps) {
        d.pool.data = pool;
        DecodeOut const got = runImplDecode(d, o);
        q.insert(q.end(), got.qNormed.begin(), got.qNormed.end());
        // B2's valid prefix only (the rest of the slot is unspecified).
        for (int32_t b = 0; b < d.batchSize; ++b) {
            auto const row = got.logits.begin() + int64_t(b) * d.maxBlocks;
            logits.insert(logits.end(), row, row + d.contextLengths[b] / 4);
        }
        outIdx.insert(outIdx.end(), got.outIdx.begin(), got.outIdx.end());
        pool = got.pool;
    }
    line("decode.B1.qNormed", q);
    line("decode.B2.logits", logits);
    line("decode.outIdx", outIdx);
    line("decode.pool", pool);
    return 0;
}

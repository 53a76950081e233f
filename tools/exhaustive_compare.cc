// Host side of the exhaustive scalar checks (see exhaustive_compare.h).
#include "tools/exhaustive_compare.h"

#include <algorithm>
#include <mutex>

#include "reference/numerics.h"
#include "reference/parallel.h"

namespace qsa {
namespace certify {

namespace {

bool isNaN32(uint32_t b) {
    return (b & 0x7FFFFFFFu) > 0x7F800000u;
}

void record(CheckStats& s, uint32_t input, uint32_t device, uint32_t reference, bool nanFree) {
    ++s.inputs;
    bool const refNaN = nanFree && isNaN32(reference);
    s.nanResults += refNaN ? 1 : 0;
    bool const ok = device == reference || (refNaN && isNaN32(device));
    if (!ok) {
        ++s.mismatches;
        if (s.examples.size() < CheckStats::kMaxExamples) {
            s.examples.push_back(Mismatch{input, device, reference});
        }
    }
}

} // namespace

void CheckStats::merge(CheckStats const& o) {
    inputs += o.inputs;
    mismatches += o.mismatches;
    nanResults += o.nanResults;
    examples.insert(examples.end(), o.examples.begin(), o.examples.end());
    std::sort(examples.begin(), examples.end());
    if (examples.size() > kMaxExamples) {
        examples.resize(kMaxExamples);
    }
}

uint32_t referenceRsqrtBits(uint32_t u) {
    return ref::floatBits(ref::rsqrtRn(ref::bitsFloat(u)));
}
uint16_t referenceHalfBits(uint32_t u) {
    return ref::floatToHalf(ref::bitsFloat(u));
}
uint16_t referenceBf16Bits(uint32_t u) {
    return ref::floatToBf16(ref::bitsFloat(u));
}
uint32_t referenceHalfToFloatBits(uint16_t h) {
    return ref::floatBits(ref::halfToFloat(h));
}
uint32_t referenceBf16ToFloatBits(uint16_t h) {
    return ref::floatBits(ref::bf16ToFloat(h));
}

void compareFloatInputs(uint32_t base, uint32_t n, uint32_t const* rsqrtBits, uint16_t const* halfBits,
                        uint16_t const* bf16Bits, int threads, CheckStats& rsqrt, CheckStats& toHalf,
                        CheckStats& toBf16) {
    // Ranges of 64 Ki inputs, each compared into its own stats and merged under a lock (the merge sorts the
    // examples, so the result does not depend on the thread count or the schedule).
    int64_t const kRange = 65536;
    int64_t const ranges = (static_cast<int64_t>(n) + kRange - 1) / kRange;
    std::mutex lock;
    ref::parallelFor(ranges, threads, 1, [&](int64_t r) {
        CheckStats rs, h, bf;
        uint32_t const lo = static_cast<uint32_t>(r * kRange);
        uint32_t const hi = static_cast<uint32_t>(std::min<int64_t>(n, (r + 1) * kRange));
        for (uint32_t i = lo; i < hi; ++i) {
            uint32_t const u = base + i;
            record(rs, u, rsqrtBits[i], referenceRsqrtBits(u), true);
            record(h, u, halfBits[i], referenceHalfBits(u), false);
            record(bf, u, bf16Bits[i], referenceBf16Bits(u), false);
        }
        std::lock_guard<std::mutex> g(lock);
        rsqrt.merge(rs);
        toHalf.merge(h);
        toBf16.merge(bf);
    });
}

void compareWiden(uint32_t const* halfToFloat, uint32_t const* bf16ToFloat, CheckStats& fromHalf,
                  CheckStats& fromBf16) {
    ref::FpEnvGuard guard;
    CheckStats h, bf;
    for (uint32_t x = 0; x < 65536u; ++x) {
        record(h, x, halfToFloat[x], referenceHalfToFloatBits(static_cast<uint16_t>(x)), true);
        record(bf, x, bf16ToFloat[x], referenceBf16ToFloatBits(static_cast<uint16_t>(x)), true);
    }
    fromHalf.merge(h);
    fromBf16.merge(bf);
}

} // namespace certify
} // namespace qsa

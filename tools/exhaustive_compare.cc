// Host side of the exhaustive scalar checks (see exhaustive_compare.h).
#include "tools/exhaustive_compare.h"

#include <algorithm>
#include <mutex>

#include "reference/independent.h"
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

namespace {

// 1/sqrt's domain under the independent checker: positive finite floats.
bool positiveFinite(uint32_t u) {
    return u > 0 && u < 0x7F800000u;
}

} // namespace

uint64_t judgedFloatInputs(int check, Truth truth, uint64_t stride) {
    if (check == 1 && truth == Truth::kIndependent) {
        return (uint64_t{0x7F800000u} - 1) / stride; // the multiples of stride in [1, 0x7F800000)
    }
    return (uint64_t{1} << 32) / stride;
}

void referenceFloatInputs(uint32_t base, uint32_t n, uint32_t stride, int threads, uint32_t* rsqrtBits,
                          uint16_t* halfBits, uint16_t* bf16Bits) {
    int64_t const kRange = 65536;
    ref::parallelFor((static_cast<int64_t>(n) + kRange - 1) / kRange, threads, 1, [&](int64_t r) {
        uint32_t const hi = static_cast<uint32_t>(std::min<int64_t>(n, (r + 1) * kRange));
        for (uint32_t i = static_cast<uint32_t>(r * kRange); i < hi; ++i) {
            uint32_t const u = base + i * stride;
            rsqrtBits[i] = referenceRsqrtBits(u);
            halfBits[i] = referenceHalfBits(u);
            bf16Bits[i] = referenceBf16Bits(u);
        }
    });
}

void referenceRoundTrips(uint32_t* half, uint32_t* bf16) {
    ref::FpEnvGuard guard;
    for (uint32_t x = 0; x < 65536u; ++x) {
        half[x] = ref::floatToHalf(ref::halfToFloat(static_cast<uint16_t>(x)));
        bf16[x] = ref::floatToBf16(ref::bf16ToFloat(static_cast<uint16_t>(x)));
    }
}

void compareFloatInputs(uint32_t base, uint32_t n, uint32_t const* rsqrtBits, uint16_t const* halfBits,
                        uint16_t const* bf16Bits, int threads, CheckStats& rsqrt, CheckStats& toHalf,
                        CheckStats& toBf16, Truth truth, uint32_t stride) {
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
            uint32_t const u = base + i * stride;
            if (truth == Truth::kReference) {
                record(rs, u, rsqrtBits[i], referenceRsqrtBits(u), true);
                record(h, u, halfBits[i], referenceHalfBits(u), false);
                record(bf, u, bf16Bits[i], referenceBf16Bits(u), false);
            } else {
                float const f = ref::bitsFloat(u);
                if (positiveFinite(u))
                    record(rs, u, rsqrtBits[i], ref::indep::rsqrtBits(f), false);
                record(h, u, halfBits[i], ref::indep::floatToHalf(f), false);
                record(bf, u, bf16Bits[i], ref::indep::floatToBf16(f), false);
            }
        }
        std::lock_guard<std::mutex> g(lock);
        rsqrt.merge(rs);
        toHalf.merge(h);
        toBf16.merge(bf);
    });
}

void compareWiden(uint32_t const* halfToFloat, uint32_t const* bf16ToFloat, CheckStats& fromHalf, CheckStats& fromBf16,
                  Truth truth) {
    ref::FpEnvGuard guard;
    CheckStats h, bf;
    for (uint32_t x = 0; x < 65536u; ++x) {
        if (truth == Truth::kReference) {
            record(h, x, halfToFloat[x], referenceHalfToFloatBits(static_cast<uint16_t>(x)), true);
            record(bf, x, bf16ToFloat[x], referenceBf16ToFloatBits(static_cast<uint16_t>(x)), true);
        } else { // a NaN pattern comes back as the canonical 0x7FFF, every other pattern as itself
            record(h, x, halfToFloat[x], (x & 0x7FFF) > 0x7C00 ? 0x7FFFu : x, false);
            record(bf, x, bf16ToFloat[x], (x & 0x7FFF) > 0x7F80 ? 0x7FFFu : x, false);
        }
    }
    fromHalf.merge(h);
    fromBf16.merge(bf);
}

} // namespace certify
} // namespace qsa

// Minimal decode workspace read-back (see decode_readback.h). Public API only (contract section 2).
#include "properties/decode_readback.h"

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

#include "kernels/qsaIndexerRunner.h"
#include "properties/backend.h"
#include "properties/ttypes.h"

namespace qsa {
namespace prop {
namespace {

namespace kn = trt_edgellm::kernel;

constexpr uint16_t kGuard = 0x7E5A; // a NaN of half and bf16: a dereferenced hole cannot read +0.0

size_t alignUp(size_t v) {
    return (v + 127) / 128 * 128;
}

class Buf {
public:
    explicit Buf(size_t bytes) : bytes_(bytes), p_(backend::alloc(bytes)) {}
    template <typename E>
    explicit Buf(std::vector<E> const& h) : Buf(h.size() * sizeof(E)) {
        backend::upload(p_, h.data(), bytes_);
    }
    ~Buf() { backend::release(p_); }
    Buf(Buf const&) = delete;
    Buf& operator=(Buf const&) = delete;
    template <typename E>
    E* as() const {
        return static_cast<E*>(p_);
    }
    template <typename E>
    std::vector<E> download(size_t offsetBytes, size_t n) const {
        std::vector<E> v(n);
        backend::download(v.data(), static_cast<char const*>(p_) + offsetBytes, n * sizeof(E));
        return v;
    }

private:
    size_t bytes_;
    void* p_;
};

std::vector<uint8_t> fillBytes(Fill f, uint64_t seed, size_t bytes) {
    std::vector<uint8_t> v(bytes, 0);
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 11);
    for (size_t i = 0; i + 3 < bytes; i += 4) {
        uint32_t w = f == Fill::kNaN ? 0x7FC17FC1u : (f == Fill::kGarbage ? uint32_t(rng()) : 0u);
        std::memcpy(&v[i], &w, 4);
    }
    return v;
}

} // namespace

DecodeReadback runImplDecodeReadback(DecodeCase const& c, Fill fill, uint64_t fillSeed) {
    ref::PoolDims const& d = c.pool.dims;
    size_t const guard = size_t(128) * std::max(d.numKVHeads, 1) * std::max(d.poolHeadDim, 1);
    std::vector<uint16_t> poolHost(guard + c.pool.data.size() + 2 * guard, kGuard);
    std::copy(c.pool.data.begin(), c.pool.data.end(), poolHost.begin() + guard);
    Buf pool(poolHost), pageTable(c.pool.pageTable);
    Buf out(std::vector<int32_t>(size_t(c.batchSize) * ref::kIndexWidth, outIdxCanary(fillSeed)));
    Buf qk(c.indexQk), cosSin(c.cosSin), ctx(c.contextLengths), wQ(c.wQ), wK(c.wK);
    Buf split(c.hasSplitCounters ? c.splitCounters : std::vector<int32_t>{});
    size_t const wsBytes = kn::getQsaIndexerDecodeWorkspaceSize(c.batchSize, c.maxBlocks);
    Buf ws(fillBytes(fill, fillSeed, wsBytes)); // backend allocations are 256-byte aligned
    kn::QsaIndexerPoolState s{};
    s.poolPtr = pool.as<uint16_t>() + guard;
    s.pageTable = pageTable.as<int32_t>();
    s.maxPagesPerSeq = d.maxPagesPerSeq;
    s.numPages = d.numPages;
    s.numKVHeads = d.numKVHeads;
    s.poolHeadDim = d.poolHeadDim;
    s.headSize = d.headSize;
    cudaStream_t st = backend::stream(0);
    backend::fence();
    int32_t* splitPtr = c.hasSplitCounters ? split.as<int32_t>() : nullptr;
    if (c.dtype == DType::kHalf) {
        kn::runQsaIndexerDecode<__half>(out.as<int32_t>(), qk.as<__half>(), cosSin.as<float>(), ctx.as<int32_t>(),
                                        wQ.as<__half>(), wK.as<__half>(), c.rmsEps, s, splitPtr, ws.as<void>(), wsBytes,
                                        c.batchSize, c.maxBlocks, st);
    } else {
        kn::runQsaIndexerDecode<__nv_bfloat16>(
            out.as<int32_t>(), qk.as<__nv_bfloat16>(), cosSin.as<float>(), ctx.as<int32_t>(), wQ.as<__nv_bfloat16>(),
            wK.as<__nv_bfloat16>(), c.rmsEps, s, splitPtr, ws.as<void>(), wsBytes, c.batchSize, c.maxBlocks, st);
    }
    backend::sync(st);
    DecodeReadback r;
    r.out.outIdx = out.download<int32_t>(0, size_t(c.batchSize) * ref::kIndexWidth);
    std::vector<uint16_t> all = pool.download<uint16_t>(0, poolHost.size());
    for (size_t i = 0; i < all.size(); ++i) {
        if ((i < guard || i >= guard + c.pool.data.size()) && all[i] != kGuard)
            throw std::runtime_error("decode read-back: a pool guard page was written at element offset " +
                                     std::to_string(int64_t(i) - int64_t(guard)));
    }
    r.out.pool.assign(all.begin() + guard, all.begin() + guard + c.pool.data.size());
    if (c.hasSplitCounters)
        r.out.splitCounters = split.download<int32_t>(0, c.splitCounters.size());
    size_t const qElems = size_t(c.batchSize) * 4 * 128;
    r.qNormed = ws.download<uint16_t>(0, qElems);
    r.logits = ws.download<float>(alignUp(qElems * 2), size_t(c.batchSize) * c.maxBlocks);
    return r;
}

} // namespace prop
} // namespace qsa

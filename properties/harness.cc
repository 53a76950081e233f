// Harness over the public API (contract section 2); memory and streams come from backend.h.
#include "properties/harness.h"

#include <cuda_bf16.h> // the T of the API's instantiations, passed only through pointers
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/qsaIndexerRunner.h"
#include "properties/backend.h"
#include "testing/inputs.h"
#include "testing/rng.h"

namespace qsa {
namespace prop {
namespace {

namespace kn = trt_edgellm::kernel;

// Owns one backend allocation of `bytes` (backend.h: device memory on the GPU, host memory for //oracle).
class Buf {
public:
    explicit Buf(size_t bytes) : bytes_(bytes), mem_(backend::alloc(bytes)) {}
    template <typename E>
    explicit Buf(std::vector<E> const& host) : Buf(host.size() * sizeof(E)) {
        backend::upload(mem_.get(), host.data(), bytes_);
    }
    template <typename E>
    E* as() const {
        return static_cast<E*>(mem_.get());
    }
    size_t bytes() const { return bytes_; }
    template <typename E>
    std::vector<E> download() const {
        std::vector<E> v(bytes_ / sizeof(E));
        backend::download(v.data(), mem_.get(), v.size() * sizeof(E));
        return v;
    }

private:
    size_t bytes_;
    std::shared_ptr<void> mem_;
};

// Calls fn with a null T* for the case's activation type T (__half or __nv_bfloat16).
template <typename Fn>
void withT(DType dt, Fn&& fn) {
    if (dt == DType::kHalf)
        fn(static_cast<__half*>(nullptr));
    else
        fn(static_cast<__nv_bfloat16*>(nullptr));
}

std::vector<uint8_t> fillBytes(Fill f, uint64_t seed, size_t bytes) {
    std::vector<uint8_t> v(bytes, 0);
    if (f == Fill::kNaN) {
        // FP32 NaN in every 4-byte word; as 2-byte halves 0x7FC1 is a NaN of half and bf16 too.
        for (size_t i = 0; i + 3 < bytes; i += 4) {
            uint32_t w = 0x7FC17FC1u;
            std::memcpy(&v[i], &w, 4);
        }
    } else if (f == Fill::kGarbage) {
        testlib::Rng rng(seed * 0x9E3779B97F4A7C15ull + 7);
        for (size_t i = 0; i < bytes; i += 8) {
            uint64_t w = rng.next();
            std::memcpy(&v[i], &w, std::min<size_t>(8, bytes - i));
        }
    }
    return v;
}

// kGuardBytes of kGuardByte after each output buffer (outIdx, splitCounters) and around the workspace: a write
// past the end (a row or counter row past the batch, a slot past the workspace size) lands there and is
// reported, on either backend and without a sanitizer.
constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuardByte = 0xA7;

void checkGuard(std::vector<uint8_t> const& g, char const* what, char const* where) {
    for (size_t i = 0; i < g.size(); ++i) {
        if (g[i] != kGuardByte) {
            throw std::runtime_error(std::string("harness: the run wrote ") + where + " " + what + " (byte " +
                                     std::to_string(i) + " of the " + std::to_string(g.size()) +
                                     "-byte guard): an index outside the buffer the API was given");
        }
    }
}

template <typename E>
Buf guarded(std::vector<E> const& v) {
    std::vector<uint8_t> b(v.size() * sizeof(E) + kGuardBytes, kGuardByte);
    if (!v.empty()) // memcpy from an empty vector's null data() is undefined (UBSan)
        std::memcpy(b.data(), v.data(), v.size() * sizeof(E));
    return Buf(b);
}

// outIdx of `rows` rows, guarded, filled with a canary from fillSeed (never a valid entry: negative and != -1).
Buf canaryOutIdx(size_t rows, uint64_t fillSeed) {
    int32_t const canary = int32_t(0x80000000u | uint32_t(0x5A5A0000u + (fillSeed & 0xFFFF)));
    return guarded(std::vector<int32_t>(rows * ref::kIndexWidth, canary));
}

// The first n elements of a guarded() buffer (or of its copy); throws when its guard was written.
template <typename E>
std::vector<E> downloadGuarded(Buf const& b, size_t n, char const* what) {
    std::vector<uint8_t> all = b.download<uint8_t>();
    checkGuard(std::vector<uint8_t>(all.begin() + n * sizeof(E), all.end()), what, "past the end of");
    std::vector<E> v(n);
    if (n > 0)
        std::memcpy(v.data(), all.data(), n * sizeof(E));
    return v;
}

// RunOptions::behindStreamWork: input() uploads NaN words and stages the true bytes apart; before() enqueues
// the wait and the copies over the inputs on the run's stream, after() a copy of an output. Off: plain buffers.
class StreamOrder {
public:
    explicit StreamOrder(bool on) : on_(on) {}
    template <typename E>
    Buf input(std::vector<E> const& v) {
        if (!on_)
            return Buf(v);
        Buf poisoned(fillBytes(Fill::kNaN, 0, v.size() * sizeof(E)));
        staged_.push_back({Buf(v), poisoned});
        return poisoned;
    }
    void before(cudaStream_t s) const {
        if (!on_)
            return;
        backend::holdStream(s, 20);
        for (auto const& [from, to] : staged_)
            backend::copyOnStream(to.as<uint8_t>(), from.as<uint8_t>(), from.bytes(), s);
    }
    Buf after(Buf const& out, cudaStream_t s) const {
        if (!on_)
            return out;
        Buf copy(out.bytes());
        backend::copyOnStream(copy.as<uint8_t>(), out.as<uint8_t>(), out.bytes(), s);
        return copy;
    }

private:
    bool on_;
    std::vector<std::pair<Buf, Buf>> staged_; // (true bytes, the input the runner reads)
};

// A workspace with its base 128-byte aligned plus o.workspaceMisalign, guarded before (the misalignment) and after.
struct Workspace {
    Workspace(size_t sizeAnswer, RunOptions const& o)
        : bytes(o.workspaceBytes ? o.workspaceBytes : sizeAnswer), lead(o.workspaceMisalign),
          buf(lead + bytes + kGuardBytes) {
        std::vector<uint8_t> init = fillBytes(o.workspaceFill, o.fillSeed, lead + bytes + kGuardBytes);
        std::fill(init.begin(), init.begin() + lead, kGuardByte);
        std::fill(init.begin() + lead + bytes, init.end(), kGuardByte);
        backend::upload(buf.as<uint8_t>(), init.data(), init.size());
        ptr = buf.as<uint8_t>() + lead;
    }
    // After the run: the bytes before and after the workspace the runner was given are untouched.
    void checkGuards() const {
        std::vector<uint8_t> before(lead), after(kGuardBytes);
        backend::download(before.data(), buf.as<uint8_t>(), lead);
        backend::download(after.data(), buf.as<uint8_t>() + lead + bytes, kGuardBytes);
        checkGuard(before, "workspace", "before the start of the");
        checkGuard(after, "workspace", "past the end of the");
    }
    // `count` elements at byte `offset` of the workspace the runner was given (a section-6 slot).
    template <typename E>
    std::vector<E> read(size_t offset, size_t count, char const* slot) const {
        if (offset + count * sizeof(E) > bytes) {
            throw std::runtime_error(std::string("harness: the ") + slot + " slot [" + std::to_string(offset) + ", " +
                                     std::to_string(offset + count * sizeof(E)) +
                                     ") of contract section 6 lies outside the workspace of " + std::to_string(bytes) +
                                     " bytes");
        }
        std::vector<E> v(count);
        backend::download(v.data(), static_cast<uint8_t const*>(ptr) + offset, count * sizeof(E));
        return v;
    }
    size_t bytes, lead;
    Buf buf;
    void* ptr;
};

// The pool with guard pages before it (page -1, and further down to the lowest id of the page table) and
// after it (ids past the V plane, at least two, and up to the highest id of the table): every id a page
// table holds lies either inside the pool or on a guard page, so a run that dereferences a -1 or
// out-of-range page writes or reads the guards, never memory outside the allocation: writes are reported
// by download(), reads see non-zero NaN patterns instead of the contract's +0.0.
class GuardedPool {
public:
    GuardedPool(ref::PoolDims const& d, std::vector<uint16_t> const& data, std::vector<int32_t> const& pageTable)
        : page_(size_t(128) * std::max(d.numKVHeads, 1) * std::max(d.poolHeadDim, 1)),
          before_(page_ * guardPagesBefore(pageTable)), size_(data.size()),
          buf_(initial(data, before_, page_ * guardPagesAfter(d, pageTable))) {}
    void* ptr() const { return buf_.as<uint16_t>() + before_; }
    std::vector<uint16_t> download() const {
        std::vector<uint16_t> all = buf_.download<uint16_t>();
        for (size_t i = 0; i < all.size(); ++i) {
            bool const guard = i < before_ || i >= before_ + size_;
            if (guard && all[i] != kGuard) {
                throw std::runtime_error(
                    std::string("harness: the pool guard region ") +
                    (i < before_ ? "BEFORE the pool (a page id < 0)" : "AFTER the pool (a page id >= 2*numPages)") +
                    " was written at element offset " + std::to_string(int64_t(i) - int64_t(before_)) +
                    ": a hole or out-of-range page was dereferenced");
            }
        }
        return std::vector<uint16_t>(all.begin() + before_, all.begin() + before_ + size_);
    }

private:
    static constexpr uint16_t kGuard = 0x7E5A;
    // Pages below page 0 that the table names (-1 always guarded).
    static size_t guardPagesBefore(std::vector<int32_t> const& table) {
        int64_t lo = -1;
        for (int32_t id : table)
            lo = std::min<int64_t>(lo, id);
        return size_t(-lo);
    }
    // Pages from 2*numPages up to the highest id of the table (at least 2).
    static size_t guardPagesAfter(ref::PoolDims const& d, std::vector<int32_t> const& table) {
        int64_t hi = int64_t(2) * d.numPages + 1;
        for (int32_t id : table)
            hi = std::max<int64_t>(hi, id);
        return size_t(hi - int64_t(2) * d.numPages + 1);
    }
    static std::vector<uint16_t> initial(std::vector<uint16_t> const& data, size_t before, size_t after) {
        std::vector<uint16_t> all(before + data.size() + after, kGuard);
        std::copy(data.begin(), data.end(), all.begin() + before);
        return all;
    }
    size_t page_, before_, size_;
    Buf buf_;
};

// Device state of one prefill run, alive until its stream is synchronized.
struct PrefillRun {
    PrefillRun(PrefillCase const& c, RunOptions const& o)
        : order(o.behindStreamWork), out(canaryOutIdx(size_t(c.batchSize) * c.seqLen, o.fillSeed)),
          qk(order.input(c.indexQk)), cosSin(order.input(c.cosSin)), ctx(order.input(c.contextLengths)),
          wQ(order.input(c.wQ)), wK(order.input(c.wK)), ws(kn::getQsaIndexerWorkspaceSize(c.batchSize, c.seqLen), o),
          pool(c.pool.dims, c.hasPool ? c.pool.data : std::vector<uint16_t>{},
               c.hasPool ? c.pool.pageTable : std::vector<int32_t>{}),
          pageTable(c.hasPool ? c.pool.pageTable : std::vector<int32_t>{}), stream(backend::stream(o.stream)),
          readStages(o.readStages) {}
    // Call after backend::fence() so that every upload has landed before any stream starts.
    void start(PrefillCase const& c) {
        kn::QsaIndexerPoolState s = testlib::poolState(c.pool.dims, pool.ptr(), pageTable.as<int32_t>());
        order.before(stream);
        withT(c.dtype, [&](auto* t) {
            using T = std::remove_pointer_t<decltype(t)>;
            kn::runQsaIndexerPrefill<T>(out.as<int32_t>(), qk.as<T>(), cosSin.as<float>(), ctx.as<int32_t>(),
                                        wQ.as<T>(), wK.as<T>(), c.rmsEps, ws.ptr, ws.bytes, c.batchSize, c.seqLen,
                                        c.hasPool ? &s : nullptr, stream);
        });
        outAfter = order.after(out, stream);
    }
    PrefillOut result(PrefillCase const& c) {
        backend::sync(stream);
        PrefillOut r;
        r.outIdx = downloadGuarded<int32_t>(outAfter, size_t(c.batchSize) * c.seqLen * ref::kIndexWidth, "outIdx");
        ws.checkGuards();
        if (c.hasPool)
            r.pool = pool.download();
        if (readStages) {
            ref::PrefillWorkspaceLayout const L = ref::prefillWorkspaceLayout(c.batchSize, c.seqLen);
            r.qNormed = ws.read<uint16_t>(L.qNormed, L.qNormedBytes / 2, "qNormed");
            r.kbar = ws.read<uint16_t>(L.kbar, L.kbarBytes / 2, "kbar");
        }
        return r;
    }
    StreamOrder order;
    Buf out, qk, cosSin, ctx, wQ, wK;
    Buf outAfter = out; // out, or its copy taken on the stream (behindStreamWork)
    Workspace ws;
    GuardedPool pool;
    Buf pageTable;
    cudaStream_t stream;
    bool readStages;
};

} // namespace

PrefillOut runImplPrefill(PrefillCase const& c, RunOptions const& o) {
    PrefillRun run(c, o);
    backend::fence();
    run.start(c);
    return run.result(c);
}

std::pair<PrefillOut, PrefillOut> runImplPrefillPair(PrefillCase const& a, PrefillCase const& b, RunOptions oa,
                                                     RunOptions ob) {
    oa.stream = 1;
    ob.stream = 2;
    PrefillRun ra(a, oa);
    PrefillRun rb(b, ob);
    backend::fence();
    ra.start(a);
    rb.start(b);
    PrefillOut outB = rb.result(b);
    return {ra.result(a), std::move(outB)};
}

DecodeOut runImplDecode(DecodeCase const& c, RunOptions const& o) {
    StreamOrder order(o.behindStreamWork);
    Buf out = canaryOutIdx(size_t(c.batchSize), o.fillSeed);
    Buf qk = order.input(c.indexQk), cosSin = order.input(c.cosSin), ctx = order.input(c.contextLengths),
        wQ = order.input(c.wQ), wK = order.input(c.wK);
    GuardedPool pool(c.pool.dims, c.pool.data, c.pool.pageTable);
    Buf pageTable(c.pool.pageTable);
    Buf split = guarded(c.hasSplitCounters ? c.splitCounters : std::vector<int32_t>{});
    Workspace ws(kn::getQsaIndexerDecodeWorkspaceSize(c.batchSize, c.maxBlocks), o);
    kn::QsaIndexerPoolState s = testlib::poolState(c.pool.dims, pool.ptr(), pageTable.as<int32_t>());
    cudaStream_t st = backend::stream(o.stream);
    backend::fence();
    int32_t* splitPtr = c.hasSplitCounters ? split.as<int32_t>() : nullptr;
    order.before(st);
    withT(c.dtype, [&](auto* t) {
        using T = std::remove_pointer_t<decltype(t)>;
        kn::runQsaIndexerDecode<T>(out.as<int32_t>(), qk.as<T>(), cosSin.as<float>(), ctx.as<int32_t>(), wQ.as<T>(),
                                   wK.as<T>(), c.rmsEps, s, splitPtr, ws.ptr, ws.bytes, c.batchSize, c.maxBlocks, st);
    });
    Buf const outAfter = order.after(out, st);
    backend::sync(st);
    DecodeOut r;
    r.outIdx = downloadGuarded<int32_t>(outAfter, size_t(c.batchSize) * ref::kIndexWidth, "outIdx");
    ws.checkGuards();
    r.pool = pool.download();
    if (c.hasSplitCounters)
        r.splitCounters = downloadGuarded<int32_t>(split, c.splitCounters.size(), "splitCounters");
    if (o.readStages) {
        ref::DecodeWorkspaceLayout const L = ref::decodeWorkspaceLayout(c.batchSize, c.maxBlocks);
        r.qNormed = ws.read<uint16_t>(L.qNormed, L.qNormedBytes / 2, "qNormed");
        r.logits = ws.read<float>(L.logits, L.logitsBytes / 4, "logits");
    }
    return r;
}

bool implOnGpu() {
    return backend::onGpu();
}

size_t prefillWorkspaceSize(int32_t batchSize, int32_t maxSeqLen) {
    return kn::getQsaIndexerWorkspaceSize(batchSize, maxSeqLen);
}

size_t decodeWorkspaceSize(int32_t maxBatchSize, int32_t maxBlocks) {
    return kn::getQsaIndexerDecodeWorkspaceSize(maxBatchSize, maxBlocks);
}

} // namespace prop
} // namespace qsa

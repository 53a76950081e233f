// Contract section 5, "All offsets are 64-bit", proven on the device. Opt-in (tags
// gpu, large, manual): about 20 GB of device memory and a minute of host work.
//
// Shape: B = 64, S = 16384, so outIdx has B * S * 2051 = 2,150,629,376 > 2^31 elements (the last 1534 rows
// lie wholly past element 2^31; row 1,047,042 straddles it), with a pool of 2 * 22528 pages of
// 128 x 2 x 384 elements = 4,429,185,024 > 2^32 elements: every V page in use lies past element 2^31 (the
// last sequences' past 2^32) and the K pages of the last sequences cross 2^31.
// Checked against the CPU reference: outIdx rows (runPrefillRows) around the 2^31 output boundary, at chunk
// boundaries (Rc = 2048 rows), the last rows (padded ones included) and a spread of others; V-tail cells
// (kbar, ref::kCompress) and K-tail cells (raw k) near and beyond 2^31 and 2^32, and untouched
// neighbours of each (the pool's canary 0xA5A5 stays).
#include <chrono>
#include <cstdio>
#include <thread>

#include "kernels/test_helper.h"

namespace qsa {
namespace ktest {
namespace {

using T = half;
constexpr DType kDt = DType::kHalf;
constexpr int32_t kB = 64, kS = 16384, kMB = kS / 4;
constexpr int32_t kNumPages = 22528, kPagesPerSeq = kS / 128; // 128 slots per sequence and plane
constexpr int32_t kHeadsKV = 2, kPoolHeadDim = 384, kHeadSize = 256;
constexpr int64_t kPageElems = int64_t(128) * kHeadsKV * kPoolHeadDim;
constexpr int64_t k2p31 = int64_t(1) << 31;
constexpr uint16_t kCanary = 0xA5A5;

// K id of (b, slot): 14336 + 128 b + slot, the top 8192 K pages (page 21846 starts past element 2^31: the
// K pages of sequences 58.. cross it). V id: 36864 + 128 b + slot, the top 8192 V pages (all past 2^31;
// page 43691 starts past element 2^32: sequences 54.. cross it).
int32_t kId(int32_t b, int32_t s) {
    return kNumPages - kB * kPagesPerSeq + kPagesPerSeq * b + s;
}
int32_t vId(int32_t b, int32_t s) {
    return 2 * kNumPages - kB * kPagesPerSeq + kPagesPerSeq * b + s;
}
int64_t cellOffset(int32_t page, int32_t row, int32_t head, int32_t col) {
    return ((int64_t(page) * 128 + row) * kHeadsKV + head) * kPoolHeadDim + col;
}

// Finite values in [0.5, 1) with random signs (half bits), from a hash of the element index: fast
// and reproducible. A few low-entropy sequences (values from {0.5, -0.5}) make ties.
void fillInputs(std::vector<uint16_t>& qk) {
    size_t const n = qk.size();
    unsigned const threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < threads; ++w) {
        pool.emplace_back([&, w] {
            size_t const lo = n * w / threads, hi = n * (w + 1) / threads;
            for (size_t i = lo; i < hi; ++i) {
                uint64_t const z = Rng(i * 0x9E3779B97F4A7C15ull).next(); // splitmix64 of (i + 1) * golden
                int64_t const b = int64_t(i / (size_t(kS) * 640));
                uint16_t const bits = uint16_t(z & 0x83FF) | 0x3800;
                qk[i] = (b % 8 == 5) ? uint16_t(bits & 0x8000) | 0x3800 : bits;
            }
        });
    }
    for (auto& t : pool)
        t.join();
}

template <typename E>
std::vector<E> downloadRange(E const* dev, int64_t offset, int64_t count) {
    std::vector<E> h(static_cast<size_t>(count));
    QSA_CUDA(cudaMemcpy(h.data(), dev + offset, size_t(count) * sizeof(E), cudaMemcpyDeviceToHost));
    return h;
}

TEST(LargeOffsets, PrefillPast2To31) {
    size_t freeB = 0, totalB = 0;
    QSA_CUDA(cudaMemGetInfo(&freeB, &totalB));
    int64_t const rows = int64_t(kB) * kS;
    size_t const outElems = size_t(rows) * ref::kIndexWidth;
    size_t const poolElems = size_t(2) * kNumPages * kPageElems;
    size_t const wsBytes = kn::getQsaIndexerWorkspaceSize(kB, kS);
    size_t const need = outElems * 4 + poolElems * 2 + size_t(rows) * 640 * 2 + wsBytes;
    ASSERT_GT(outElems, size_t(k2p31));
    ASSERT_GT(poolElems, size_t(1) << 32);
    // A GPU too small for this test FAILS (never a skip that looks like a pass).
    ASSERT_LT(need + (size_t(1) << 30), freeB) << "needs " << need << " bytes of device memory, " << freeB << " free";
    std::printf("large: outIdx %zu elements, pool %zu elements, device bytes %zu of %zu free\n", outElems, poolElems,
                need, freeB);

    ref::PrefillCase c;
    c.dtype = kDt;
    c.batchSize = kB;
    c.seqLen = kS;
    c.indexQk.resize(size_t(rows) * 640);
    fillInputs(c.indexQk);
    c.cosSin = makeCosSin(kS);
    for (int32_t b = 0; b < kB; ++b)
        c.contextLengths.push_back(kS - b % 4 - (b == 40 ? 5000 : 0)); // ctx % 4 = 0..3; one shorter sequence
    Rng rng(314);
    c.wQ = makeGamma(kDt, Gamma::kSmall, rng);
    c.wK = makeGamma(kDt, Gamma::kSmall, rng);
    c.keepLogits = false;
    std::vector<int32_t> table(size_t(kB) * 2 * kPagesPerSeq);
    for (int32_t b = 0; b < kB; ++b) {
        for (int32_t s = 0; s < kPagesPerSeq; ++s) {
            table[(size_t(b) * 2 + 0) * kPagesPerSeq + s] = kId(b, s);
            table[(size_t(b) * 2 + 1) * kPagesPerSeq + s] = vId(b, s);
        }
    }

    DevBuf<uint16_t> qk(c.indexQk), wQ(c.wQ), wK(c.wK);
    DevBuf<float> cs(c.cosSin);
    DevBuf<int32_t> ctx(c.contextLengths), dTable(table);
    DevBuf<int32_t> out(outElems);
    out.fillBytes(0x5A);
    DevBuf<uint16_t> pool(poolElems);
    pool.fillBytes(0xA5);
    DevBuf<uint8_t> ws(wsBytes);
    ws.fillBytes(0xFF);
    kn::QsaIndexerPoolState st{pool.get(), dTable.get(), kPagesPerSeq, kNumPages, kHeadsKV, kPoolHeadDim, kHeadSize};
    auto t0 = std::chrono::steady_clock::now();
    kn::runQsaIndexerPrefill<T>(out.get(), qk.as<T const>(), cs.get(), ctx.get(), wQ.as<T const>(), wK.as<T const>(),
                                c.rmsEps, ws.get(), wsBytes, kB, kS, &st, nullptr);
    QSA_CUDA(cudaDeviceSynchronize());
    QSA_CUDA(cudaGetLastError());
    double const gpuS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // ---- outIdx rows -------------------------------------------------------------------------
    int64_t const Rc = ref::prefillChunkRows(kB, kS);
    int64_t const rStraddle = k2p31 / ref::kIndexWidth; // its row spans element 2^31
    std::vector<int64_t> sample;
    auto add = [&](int64_t r) {
        if (r >= 0 && r < rows && std::find(sample.begin(), sample.end(), r) == sample.end())
            sample.push_back(r);
    };
    for (int64_t d = -2; d <= 2; ++d)
        add(rStraddle + d);
    for (int64_t k : {int64_t(1), int64_t(2), rows / Rc / 2, rStraddle / Rc, rStraddle / Rc + 1, rows / Rc - 1}) {
        add(k * Rc - 1);
        add(k * Rc);
    }
    for (int64_t d = 1; d <= 6; ++d)
        add(rows - d); // the last rows: seq 63 has ctx 16381, so the last 3 are padded
    for (int32_t b : {0, 21, 40, 42, 58, 63}) {
        add(int64_t(b) * kS + 2047); // first row with nVis 512
        add(int64_t(b) * kS + 2051); // nVis 513 (selection)
        add(int64_t(b) * kS + c.contextLengths[b] - 1);
        add(int64_t(b) * kS + c.contextLengths[b]); // padded (or the next sequence's row 0)
    }
    Rng pick(2718);
    for (int i = 0; i < 24; ++i)
        add(int64_t(pick() % uint64_t(rows)));
    auto t1 = std::chrono::steady_clock::now();
    std::vector<int32_t> const expect = ref::runPrefillRows(c, sample);
    double const refS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    int64_t past = 0;
    for (size_t i = 0; i < sample.size(); ++i) {
        int64_t const r = sample[i];
        std::vector<int32_t> const got = downloadRange(out.get(), r * ref::kIndexWidth, ref::kIndexWidth);
        std::vector<int32_t> const want(expect.begin() + i * ref::kIndexWidth,
                                        expect.begin() + (i + 1) * ref::kIndexWidth);
        past += (r + 1) * ref::kIndexWidth > k2p31 ? 1 : 0;
        ASSERT_TRUE(bitsEqual(
            want, got,
            {"outIdx row " + std::to_string(r) + " (element offset " + std::to_string(r * ref::kIndexWidth) + ")",
             params("B=64 S=16384 b=", r / kS, " t=", r % kS, " ctx=", c.contextLengths[r / kS]),
             size_t(ref::kIndexWidth)}));
    }

    // ---- pool cells ----------------------------------------------------------------------------
    int64_t vPast31 = 0, vPast32 = 0, kPast31 = 0, checkedCells = 0;
    for (int32_t b : {0, 41, 42, 57, 58, 59, 62, 63}) {
        int32_t const cb = c.contextLengths[b];
        uint16_t const* seq = c.indexQk.data() + size_t(b) * kS * 640;
        // V-tails of blocks at the start, the middle, and the end of the sequence.
        for (int32_t g : {0, 1, 31, 32, 2047, 2048, cb / 4 - 2, cb / 4 - 1}) {
            std::vector<uint16_t> kbar(size_t(kMB) * 128);
            ref::kCompress(kDt, kbar.data(), seq, c.cosSin.data(), &cb, c.wK.data(), c.rmsEps, 1, kS, kMB, g, g + 1, 0);
            int32_t const page = vId(b, (4 * g) >> 7);
            int64_t const off = cellOffset(page, (4 * g) & 127, 0, 0);
            std::vector<uint16_t> const got = downloadRange(pool.get(), off, 2 * kPoolHeadDim); // heads 0, 1
            std::vector<uint16_t> want(got.size(), kCanary);
            std::copy(kbar.begin() + size_t(g) * 128, kbar.begin() + size_t(g + 1) * 128, want.begin() + kHeadSize);
            ASSERT_TRUE(
                bitsEqual(want, got,
                          {"V-tail row of block " + std::to_string(g) + " at element offset " + std::to_string(off),
                           params("b=", b, " ctx=", cb, " page=", page), size_t(kPoolHeadDim), kDt}));
            // Row 4g + 1 of the page is no kbar row: untouched.
            std::vector<uint16_t> const next =
                downloadRange(pool.get(), cellOffset(page, ((4 * g) & 127) + 1, 0, 0), kPoolHeadDim);
            ASSERT_TRUE(bitsEqual(std::vector<uint16_t>(kPoolHeadDim, kCanary), next,
                                  {"V page row 4g+1 (untouched)", params("b=", b, " g=", g), 0, kDt}));
            vPast31 += off > k2p31 ? 1 : 0;
            vPast32 += off > (int64_t(1) << 32) ? 1 : 0;
            checkedCells += 3 * kPoolHeadDim;
        }
        // K-tails: raw k of the trailing incomplete block [cb - cb % 4, cb); the token before it untouched.
        for (int32_t t = cb - cb % 4 - 1; t < cb; ++t) {
            int32_t const page = kId(b, t >> 7);
            int64_t const off = cellOffset(page, t & 127, 0, 0);
            std::vector<uint16_t> const got = downloadRange(pool.get(), off, kPoolHeadDim);
            std::vector<uint16_t> want(kPoolHeadDim, kCanary);
            if (t >= cb - cb % 4)
                std::copy(seq + size_t(t) * 640 + 512, seq + size_t(t) * 640 + 640, want.begin() + kHeadSize);
            ASSERT_TRUE(
                bitsEqual(want, got,
                          {"K-tail row of token " + std::to_string(t) + " at element offset " + std::to_string(off),
                           params("b=", b, " ctx=", cb, " page=", page), size_t(kPoolHeadDim), kDt}));
            kPast31 += off > k2p31 ? 1 : 0;
            checkedCells += kPoolHeadDim;
        }
    }
    std::printf("large: GPU prefill %.2f s; %zu outIdx rows vs reference (%lld past element 2^31, reference %.1f s); "
                "%lld pool cells (V rows past 2^31: %lld, past 2^32: %lld; K rows past 2^31: %lld)\n",
                gpuS, sample.size(), static_cast<long long>(past), refS, static_cast<long long>(checkedCells),
                static_cast<long long>(vPast31), static_cast<long long>(vPast32), static_cast<long long>(kPast31));
    EXPECT_GE(past, 8);
    EXPECT_GT(vPast32, 0);
    EXPECT_GT(kPast31, 0);
}

} // namespace
} // namespace ktest
} // namespace qsa

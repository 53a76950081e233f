// Mutation-testing hooks (tools/mutants/README.md). A hook in a kernel reads
//     if (QSA_MUTANT(n)) { ...mutated... } else { ...original... }
// In the production build (no -DQSA_MUTANTS, the default of //kernels:enable_mutants) QSA_MUTANT(n) is the
// constant `false` and QSA_MUTANT_SYNC() is empty: the compiler drops every mutated branch and the
// generated code is that of the original lines (//tools/mutants:catalog_test; tools/mutants/README.md records the SASS
// comparison). Built with --//kernels:enable_mutants=true (-DQSA_MUTANTS), the active mutant is the integer in the
// environment variable QSA_MUTANT (0 or unset: none), read once on the host. Device code sees it through a
// per-translation-unit __constant__ int that QSA_MUTANT_SYNC() (first line of each host launcher of a TU
// with device hooks) copies once per device; the copy runs on a private non-blocking stream with the
// thread's capture mode relaxed, so launchers stay usable inside CUDA graph capture.
#pragma once

#if defined(QSA_MUTANTS)

#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace qsa_mutants {

// The marker names the numerics too: run_mutants.sh build checks that the `fast` pass's binaries carry the
// fast-math kernels (//kernels:qsa_kernels_fast) and the other passes' binaries do not.
#if defined(QSA_FAST_MATH)
#define QSA_MUTANTS_MARKER "QSA_MUTANTS_BUILD (fast math)"
#else
#define QSA_MUTANTS_MARKER "QSA_MUTANTS_BUILD"
#endif

// The active mutant id (QSA_MUTANT=<n>), read once per process. The marker string below exists only in
// mutant builds; the catalog test checks that the production archive does not contain it.
inline int activeMutant() {
    static int const id = [] {
        char const* s = std::getenv("QSA_MUTANT");
        int const v = s != nullptr ? std::atoi(s) : 0;
        if (v != 0) {
            std::fprintf(stderr, QSA_MUTANTS_MARKER ": mutant %d active\n", v);
        }
        return v;
    }();
    return id;
}

} // namespace qsa_mutants

namespace {
// One copy per translation unit (no relocatable device code): set by qsaMutantSyncTu().
__constant__ int qsaMutantDev = 0;
std::atomic<unsigned long long> qsaMutantSyncedDevices{0};

inline void qsaMutantSyncTu() {
    int const id = qsa_mutants::activeMutant();
    if (id == 0) {
        return; // the __constant__ already holds 0
    }
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        return;
    }
    unsigned long long const bit = 1ull << dev;
    if (qsaMutantSyncedDevices.load() & bit) {
        return;
    }
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaStream_t s = nullptr;
    bool ok = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess;
    ok = ok && cudaMemcpyToSymbolAsync(qsaMutantDev, &id, sizeof(id), 0, cudaMemcpyHostToDevice, s) == cudaSuccess;
    ok = ok && cudaStreamSynchronize(s) == cudaSuccess;
    if (s != nullptr) {
        cudaStreamDestroy(s);
    }
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (!ok) {
        std::fprintf(stderr, "QSA_MUTANTS_BUILD: could not set mutant %d on device %d\n", id, dev);
        std::abort();
    }
    qsaMutantSyncedDevices.fetch_or(bit);
}
} // namespace

#if defined(__CUDA_ARCH__)
#define QSA_MUTANT(id) (qsaMutantDev == (id))
#else
#define QSA_MUTANT(id) (::qsa_mutants::activeMutant() == (id))
#endif
#define QSA_MUTANT_SYNC() qsaMutantSyncTu()

#else // production build

#define QSA_MUTANT(id) false
#define QSA_MUTANT_SYNC() ((void)0)

#endif

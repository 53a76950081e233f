// The run-time door's loader (//api:loaded): opens a shared library that exports the public API of contract
// section 2 under its exact C++ names, and says in ONE line why a library cannot be used. No CUDA is linked here:
// the driver is asked through dlopen("libcuda.so.1") and the library's runtime through its own exports.
#pragma once

#include <string>
#include <vector>

namespace qsa {
namespace api {

// The six functions of contract section 2, both template instantiations, in this order.
enum ApiFn { kPrefillSize, kDecodeSize, kPrefillHalf, kPrefillBf16, kDecodeHalf, kDecodeBf16, kApiFnCount };

struct ApiSymbol {
    char const* mangled;   // what dlsym looks up (the Itanium C++ ABI name of the header's declaration)
    char const* signature; // what a message shows
};
extern ApiSymbol const kApiSymbols[kApiFnCount];

struct LoadedLibrary {
    void* handle = nullptr;
    void* fn[kApiFnCount] = {};
};

// dlopen(path, RTLD_NOW | RTLD_LOCAL) and dlsym of the six functions. "" on success; else one line naming the
// cause (no such file, not a shared library, a CUDA runtime the loader cannot find, an unresolved dependency,
// every missing API symbol demangled). In-process: a library whose constructors crash crashes the caller, so
// front ends run probeLibrary() first.
std::string openLibrary(std::string const& path, LoadedLibrary& out);

struct ProbeResult {
    bool ok = false;
    std::string line; // ok: "6 API symbols, CUDA runtime 13.0, workspace (1, 64) = N bytes, ..."; else the cause
};

// Everything the kit checks before it runs a single test, in a forked child so that a library that crashes or
// hangs while loading or in a size function is one line too: openLibrary(); the CUDA runtime the library uses
// (its cudaRuntimeGetVersion) is not newer than the driver (driverVersion; < 0: ask this host's driver, 0: no
// driver, the comparison is skipped and said); both size functions answer valid arguments without throwing.
// Call it before this process makes any CUDA call (a forked child must not inherit a CUDA context).
ProbeResult probeLibrary(std::string const& path, int driverVersion = -1, double timeoutSeconds = 60);

} // namespace api
} // namespace qsa

// What a shared library IS, read from its bytes alone (no dlopen, no GPU): the facts a certificate names so that a
// verdict is tied to one build of one library, and the ELF facts the loader needs to refuse a file in one line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qsa {
namespace api {

struct ElfFacts {
    std::string error;                // "" when the file is an ELF shared library for this host; else why not
    std::string buildId;              // NT_GNU_BUILD_ID as lowercase hex, "" when the library carries none
    std::string soname;               // DT_SONAME, "" when none
    std::vector<std::string> needed;  // DT_NEEDED, in order
    std::vector<std::string> defined; // names the dynamic symbol table defines (functions and objects)
};

struct LibraryIdentity {
    std::string path;   // absolute
    uint64_t bytes = 0; // file size
    std::string sha256; // lowercase hex of the whole file
    ElfFacts elf;
    // The CUDA runtime it links, in words: "shared libcudart.so.13", "static (...)" (exported symbols, or the
    // libcudart_static object markers when nvcc's static runtime hides them), or
    // "none visible (no libcudart in DT_NEEDED, no cuda* runtime symbol defined)".
    std::string cudaRuntime;
    // The nvcc that compiled its device code, as the fatbinary records it ("Cuda compilation tools, release 13.0,
    // V13.0.88"), "" when none is found.
    std::string nvcc;
    std::string error; // "" when the file could be read; else why not (no such file, a directory, ...)
};

// The file's identity; never throws (an unreadable or malformed file is described in .error / .elf.error).
// withSha256 = false leaves .sha256 empty: the loader, run at the start of every kit binary, needs only the ELF facts.
LibraryIdentity identifyLibrary(std::string const& path, bool withSha256 = true);

// The identity as the certificate records it: path, bytes, sha256, build_id, soname, cuda_runtime, needed.
nlohmann::json identityJson(LibraryIdentity const& id);

// "libcudart.so.13" -> 13; -1 when name is not a versioned libcudart soname.
int cudartSonameMajor(std::string const& name);

} // namespace api
} // namespace qsa

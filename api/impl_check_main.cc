// impl_check LIB: what the kit checks before it certifies a shared library, on its own (the kit's first step,
// and //api:loaded_test's window onto the loader). Prints the library's identity, then one verdict line:
//   impl_check: OK <what was resolved and asked>
//   impl_check: REFUSED <the one cause>
// Exit 0 OK, 1 REFUSED, 2 usage. --json prints the identity and verdict as one JSON object instead.
#include <cstdlib>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "api/impl_loader.h"
#include "api/library_identity.h"

int main(int argc, char** argv) {
    std::string lib;
    int driver = -1;
    double timeout = 60;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        std::string const a = argv[i];
        if (a == "--driver-cuda-version" && i + 1 < argc) {
            driver = std::atoi(argv[++i]); // e.g. 13000; 0 = no driver (the runtime comparison is skipped)
        } else if (a == "--timeout" && i + 1 < argc) {
            timeout = std::atof(argv[++i]);
        } else if (a == "--json") {
            json = true;
        } else if (lib.empty() && !a.empty() && a[0] != '-') {
            lib = a;
        } else {
            lib.clear(); // an unknown argument or a second LIB: the usage below
            break;
        }
    }
    if (lib.empty()) {
        std::cerr << "usage: impl_check LIB [--json] [--timeout S] [--driver-cuda-version N]\n";
        return 2;
    }
    qsa::api::LibraryIdentity const id = qsa::api::identifyLibrary(lib);
    qsa::api::ProbeResult const r = qsa::api::probeLibrary(lib, driver, timeout);
    if (json) {
        nlohmann::json j = qsa::api::identityJson(id);
        j["verdict"] = r.ok ? "OK" : "REFUSED";
        j["line"] = r.line;
        std::cout << j.dump(2) << "\n";
    } else {
        std::cout << "library: " << id.path << "\n";
        if (id.error.empty()) {
            std::cout << "  bytes " << id.bytes << ", sha256 " << id.sha256 << "\n  build id "
                      << (id.elf.buildId.empty() ? "none" : id.elf.buildId) << ", CUDA runtime " << id.cudaRuntime
                      << "\n  device code: " << (id.nvcc.empty() ? "no nvcc release recorded" : id.nvcc) << "\n";
        }
        std::cout << "impl_check: " << (r.ok ? "OK " : "REFUSED ") << r.line << "\n";
    }
    return r.ok ? 0 : 1;
}

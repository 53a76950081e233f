#include "api/impl_loader.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <regex>
#include <stdexcept>

#include "api/library_identity.h"

namespace qsa {
namespace api {

// The names the header's declarations get under the Itanium C++ ABI (GCC and Clang on Linux): __half and
// __nv_bfloat16 are the CUDA headers' structs, cudaStream_t is CUstream_st*. //api:loaded_test checks that a
// library compiled from kernels/qsaIndexerRunner.h exports exactly these.
ApiSymbol const kApiSymbols[kApiFnCount] = {
    {"_ZN11trt_edgellm6kernel26getQsaIndexerWorkspaceSizeEii",
     "trt_edgellm::kernel::getQsaIndexerWorkspaceSize(int, int)"},
    {"_ZN11trt_edgellm6kernel32getQsaIndexerDecodeWorkspaceSizeEii",
     "trt_edgellm::kernel::getQsaIndexerDecodeWorkspaceSize(int, int)"},
    {"_ZN11trt_edgellm6kernel20runQsaIndexerPrefillI6__halfEEvPiPKT_PKfPKiS6_S6_fPvmiiPKNS0_19QsaIndexerPoolStateEP11"
     "CUstream_st",
     "trt_edgellm::kernel::runQsaIndexerPrefill<__half>(...)"},
    {"_ZN11trt_edgellm6kernel20runQsaIndexerPrefillI13__nv_bfloat16EEvPiPKT_PKfPKiS6_S6_fPvmiiPKNS0_"
     "19QsaIndexerPoolStateEP11CUstream_st",
     "trt_edgellm::kernel::runQsaIndexerPrefill<__nv_bfloat16>(...)"},
    {"_ZN11trt_edgellm6kernel19runQsaIndexerDecodeI6__halfEEvPiPKT_PKfPKiS6_S6_fRKNS0_19QsaIndexerPoolStateES3_"
     "PvmiiP11CUstream_st",
     "trt_edgellm::kernel::runQsaIndexerDecode<__half>(...)"},
    {"_ZN11trt_edgellm6kernel19runQsaIndexerDecodeI13__nv_bfloat16EEvPiPKT_PKfPKiS6_S6_fRKNS0_"
     "19QsaIndexerPoolStateES3_PvmiiP11CUstream_st",
     "trt_edgellm::kernel::runQsaIndexerDecode<__nv_bfloat16>(...)"},
};

namespace {

std::string demangle(std::string const& name) {
    int status = 0;
    char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || d == nullptr) {
        return name;
    }
    std::string s = d;
    std::free(d);
    return s;
}

// dlerror's text with every mangled name in it demangled.
std::string demangleAll(std::string const& text) {
    static std::regex const mangled("_Z[A-Za-z0-9_]+");
    std::string out;
    auto last = text.cbegin();
    for (std::sregex_iterator it(text.begin(), text.end(), mangled), end; it != end; ++it) {
        out.append(last, text.cbegin() + it->position());
        out += demangle(it->str());
        last = text.cbegin() + it->position() + it->length();
    }
    out.append(last, text.cend());
    return out;
}

} // namespace

std::string openLibrary(std::string const& path, LoadedLibrary& out) {
    std::string const head = "cannot load " + path + ": ";
    if (path.empty()) {
        return "no implementation library given (QSA_IMPL_LIB is empty; certify and qsa_gpu take --impl-lib)";
    }
    LibraryIdentity const id = identifyLibrary(path, /*withSha256=*/false);
    if (!id.error.empty()) {
        return head + id.error;
    }
    if (!id.elf.error.empty()) {
        return head + id.elf.error;
    }
    // A path without '/' would make dlopen search the system's directories for another library of that name.
    std::string const where = path.find('/') == std::string::npos ? "./" + path : path;
    dlerror();
    void* h = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        char const* e = dlerror();
        std::string const why = e != nullptr ? e : "dlopen failed without a reason";
        for (std::string const& n : id.elf.needed) {
            if (cudartSonameMajor(n) >= 0 && why.find(n) != std::string::npos) {
                return head + "it needs the CUDA runtime " + n +
                       " (linked shared), which this host's loader cannot find: the kit ships no CUDA runtime; link "
                       "it statically (nvcc's default, -cudart static) or put the directory of " +
                       n + " on LD_LIBRARY_PATH (" + why + ")";
            }
        }
        return head + demangleAll(why);
    }
    std::string missing;
    int nMissing = 0;
    for (int i = 0; i < kApiFnCount; ++i) {
        out.fn[i] = dlsym(h, kApiSymbols[i].mangled);
        if (out.fn[i] == nullptr) {
            missing += (nMissing++ ? ", " : "") + demangle(kApiSymbols[i].mangled);
        }
    }
    if (nMissing != 0) {
        dlclose(h);
        return head + "missing " + (nMissing == 1 ? "symbol " : std::to_string(nMissing) + " symbols ") + missing +
               " (a library exports all six functions of contract section 2, both template instantiations, with "
               "default visibility and C++ linkage)";
    }
    out.handle = h;
    return "";
}

namespace {

// The CUDA version of the driver on this host (e.g. 13000), 0 when libcuda.so.1 cannot be loaded.
int driverCudaVersion() {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == nullptr) {
        return 0;
    }
    using GetVersion = int (*)(int*);
    auto fn = reinterpret_cast<GetVersion>(dlsym(cuda, "cuDriverGetVersion"));
    int v = 0;
    if (fn == nullptr || fn(&v) != 0) {
        v = 0;
    }
    return v; // libcuda stays loaded: the process will use it
}

// "13.0" for 13000.
std::string cudaVersionString(int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The child's side of probeLibrary(): writes "@stage ..." lines as it goes and ends with "@ok ..." or "@refused ...".
int probeChild(int fd, std::string const& path, int driverVersion) {
    auto say = [fd](std::string const& s) { dprintf(fd, "%s\n", s.c_str()); };
    say("@stage loading the library (dlopen, its constructors)");
    LoadedLibrary lib;
    std::string const err = openLibrary(path, lib);
    if (!err.empty()) {
        say("@refused " + err);
        return 1;
    }
    std::string const head = "cannot use " + path + ": ";
    say("@stage asking its CUDA runtime for its version (cudaRuntimeGetVersion)");
    using RuntimeVersion = int (*)(int*);
    auto rtv = reinterpret_cast<RuntimeVersion>(dlsym(lib.handle, "cudaRuntimeGetVersion"));
    int runtime = 0;
    if (rtv != nullptr && rtv(&runtime) != 0) {
        runtime = 0;
    }
    if (driverVersion < 0) {
        driverVersion = driverCudaVersion();
    }
    if (runtime > 0 && driverVersion > 0 && runtime > driverVersion) {
        say("@refused " + head + "it uses CUDA runtime " + cudaVersionString(runtime) +
            ", newer than this host's driver supports (CUDA " + cudaVersionString(driverVersion) +
            "): every call would fail with cudaErrorInsufficientDriver; build it with CUDA <= " +
            cudaVersionString(driverVersion) + " or update the driver");
        return 1;
    }
    std::string sizes;
    struct Call {
        ApiFn fn;
        int a, b;
        char const* name;
    };
    for (Call const& c : {Call{kPrefillSize, 1, 64, "getQsaIndexerWorkspaceSize"},
                          Call{kDecodeSize, 1, 16, "getQsaIndexerDecodeWorkspaceSize"}}) {
        std::string const call = std::string(c.name) + "(" + std::to_string(c.a) + ", " + std::to_string(c.b) + ")";
        say("@stage calling " + call);
        try {
            auto f = reinterpret_cast<size_t (*)(int32_t, int32_t)>(lib.fn[c.fn]);
            sizes += ", " + call + " = " + std::to_string(f(c.a, c.b)) + " bytes";
        } catch (std::exception const& e) {
            say("@refused " + head + call + " threw on valid arguments: " + e.what());
            return 1;
        } catch (...) {
            say("@refused " + head + call + " threw on valid arguments (not a std::exception)");
            return 1;
        }
    }
    say("@ok " + std::to_string(kApiFnCount) + " API symbols resolved, CUDA runtime " +
        (runtime > 0 ? cudaVersionString(runtime) : std::string("not visible")) + ", driver " +
        (driverVersion > 0 ? "CUDA " + cudaVersionString(driverVersion) : std::string("not found")) + sizes);
    return 0;
}

std::string signalName(int sig) {
    char const* abbrev = sigabbrev_np(sig);
    return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

} // namespace

ProbeResult probeLibrary(std::string const& path, int driverVersion, double timeoutSeconds) {
    ProbeResult r;
    int fds[2];
    if (pipe(fds) != 0) {
        r.line = "cannot check " + path + ": pipe: " + std::strerror(errno);
        return r;
    }
    pid_t const pid = fork();
    if (pid < 0) {
        r.line = "cannot check " + path + ": fork: " + std::strerror(errno);
        close(fds[0]);
        close(fds[1]);
        return r;
    }
    if (pid == 0) {
        close(fds[0]);
        _exit(probeChild(fds[1], path, driverVersion));
    }
    close(fds[1]);
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeoutSeconds * 1e3));
    std::string got;
    bool timedOut = false;
    for (;;) {
        int const left = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
        if (left <= 0) {
            timedOut = true;
            kill(pid, SIGKILL);
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        int const pr = poll(&p, 1, left);
        if (pr < 0 && errno == EINTR) {
            continue;
        }
        if (pr <= 0) {
            continue; // the deadline check above ends it
        }
        char buf[4096];
        ssize_t const n = read(fds[0], buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        got.append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string stage = "starting", verdict;
    size_t pos = 0;
    for (size_t nl; (nl = got.find('\n', pos)) != std::string::npos; pos = nl + 1) {
        std::string const line = got.substr(pos, nl - pos);
        if (line.rfind("@stage ", 0) == 0) {
            stage = line.substr(7);
        } else if (line.rfind("@ok ", 0) == 0) {
            r.ok = true;
            verdict = line.substr(4);
        } else if (line.rfind("@refused ", 0) == 0) {
            verdict = line.substr(9);
        }
    }
    if (timedOut) {
        r.ok = false;
        r.line = "cannot use " + path + ": it hung for " + std::to_string(int(timeoutSeconds)) + " s while " + stage;
    } else if (WIFSIGNALED(status)) {
        r.ok = false;
        r.line = "cannot use " + path + ": it crashed (" + signalName(WTERMSIG(status)) + ") while " + stage;
    } else if (verdict.empty()) {
        r.ok = false;
        r.line = "cannot use " + path + ": the check ended (exit " + std::to_string(WEXITSTATUS(status)) +
                 ") without a verdict while " + stage + " (the library called exit?)";
    } else {
        r.line = verdict;
    }
    return r;
}

} // namespace api
} // namespace qsa

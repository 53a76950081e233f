// THE exhaustive driver of the scalar primitives (contract section 4), bit for bit, with two checkers:
//   --checker=gpu (default)  the device functions the kernels use against the CPU reference: all 2^32 float
//                            inputs of the correctly rounded 1/sqrt and of the float -> half / bf16 casts, all
//                            2^16 half and bf16 -> float (certify runs this one);
//   --checker=independent    the CPU reference's casts and rsqrtRn against the integer-only ground truth of
//                            reference/independent.h: casts on every float, 1/sqrt on every positive finite
//                            float, the T -> float -> T round trip of all 2^16 patterns. No GPU needed.
// Opt-in (not in the pre-merge run):
//   bazel run //tools:exhaustive_primitives -- [--checker=independent] [--threads N] [--json FILE]
// Prints "progress DONE TOTAL" lines (inputs) that certify reads; exit 0 all match, 1 mismatches, 2 error.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "testing/device_buffer.h"
#include "tools/certify_cuda.h"
#include "tools/exhaustive_compare.h"
#include "tools/exhaustive_kernels.h"

using namespace qsa::certify;
using nlohmann::json;

namespace {

// Check names (the JSON keys) and what each compares, per checker.
char const* const kGpuNames[6] = {"", "rsqrt_rn", "float_to_half", "float_to_bf16", "half_to_float", "bf16_to_float"};
char const* const kIndependentNames[6] = {
    "", "rsqrt_rn", "float_to_half", "float_to_bf16", "half_round_trip", "bf16_round_trip"};
char const* const kIndependentFunctions[6] = {"",
                                              "qsa::ref::rsqrtRn vs indep::rsqrtBits",
                                              "qsa::ref::floatToHalf vs indep::floatToHalf",
                                              "qsa::ref::floatToBf16 vs indep::floatToBf16",
                                              "qsa::ref::floatToHalf(halfToFloat(h)) vs h",
                                              "qsa::ref::floatToBf16(bf16ToFloat(h)) vs h"};
char const* const* kNames = kGpuNames;

void cuda(cudaError_t e, char const* what) {
    if (e != cudaSuccess) {
        throw std::runtime_error(std::string("exhaustive_primitives: ") + what + ": " + cudaGetErrorName(e) + " (" +
                                 cudaGetErrorString(e) + ")");
    }
}

// QSA_EXHAUSTIVE_PLANT="<check>[:<input hex>]" plants a one-bit error in the candidate (see exhaustive_kernels.h).
Plant plantFromEnv() {
    Plant p;
    char const* env = std::getenv("QSA_EXHAUSTIVE_PLANT");
    if (env == nullptr || *env == 0) {
        return p;
    }
    std::string const s = env;
    std::string const name = s.substr(0, s.find(':'));
    for (int w = 1; w <= 5; ++w) {
        if (name == kNames[w]) {
            p.which = w;
        }
    }
    if (p.which == 0) {
        throw std::runtime_error("exhaustive_primitives: QSA_EXHAUSTIVE_PLANT names no check: '" + s + "'");
    }
    p.input = p.which <= 3 ? 0x3F800000u : 0x3C00u; // 1.0f / half 1.0 by default
    if (s.find(':') != std::string::npos) {
        p.input = static_cast<uint32_t>(std::stoul(s.substr(s.find(':') + 1), nullptr, 16));
    }
    return p;
}

std::string hex(uint32_t v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0x%0*x", digits, v);
    return buf;
}

json statsJson(CheckStats const& s, int which, uint64_t expected, bool independent) {
    int const digits = which == 2 || which == 3 ? 4 : 8;
    json ex = json::array();
    for (Mismatch const& m : s.examples) {
        ex.push_back({{"input", hex(m.input, which >= 4 ? 4 : 8)},
                      {"device", hex(m.device, digits)},
                      {"reference", hex(m.reference, digits)}});
    }
    return {{"inputs", s.inputs},
            {"expected_inputs", expected},
            {"mismatches", s.mismatches},
            {"nan_results", s.nanResults},
            {"device_function", independent ? kIndependentFunctions[which] : deviceFunctionName(which)},
            {"examples", ex}};
}

// Host copy of the device results of one chunk (pinned), released with the slot.
struct Slot {
    uint32_t* rs = nullptr;
    uint16_t* h = nullptr;
    uint16_t* bf = nullptr;
    uint32_t base = 0, n = 0;
    cudaEvent_t done = nullptr;
    Slot() = default;
    Slot(Slot const&) = delete;
    Slot& operator=(Slot const&) = delete;
    ~Slot() {
        cudaFreeHost(rs);
        cudaFreeHost(h);
        cudaFreeHost(bf);
        cudaEventDestroy(done);
    }
};

void progress(uint64_t done, uint64_t total) {
    std::printf("progress %llu %llu\n", (unsigned long long)done, (unsigned long long)total);
    std::fflush(stdout);
}

// The candidate computed on the host: the reference (the independent checker's candidate, or the simulated
// device), every stride-th float input, in chunks; a planted input gets its lowest bit flipped.
void hostFloatInputs(Truth truth, uint64_t stride, uint32_t chunk, int threads, Plant const& plant, CheckStats* st,
                     uint64_t& done, uint64_t total) {
    uint64_t const inputs = (uint64_t(1) << 32) / stride;
    uint32_t const n = static_cast<uint32_t>(std::min<uint64_t>(chunk, inputs));
    std::vector<uint32_t> rs(n);
    std::vector<uint16_t> h(n), bf(n);
    for (uint64_t first = 0; first < inputs; first += n) {
        uint32_t const base = static_cast<uint32_t>(first * stride);
        referenceFloatInputs(base, n, static_cast<uint32_t>(stride), threads, rs.data(), h.data(), bf.data());
        if (plant.which >= 1 && plant.which <= 3 && plant.input >= base && (plant.input - base) % stride == 0 &&
            (plant.input - base) / stride < n) {
            uint32_t const i = static_cast<uint32_t>((plant.input - base) / stride);
            rs[i] ^= plant.which == 1 ? 1u : 0u;
            h[i] ^= plant.which == 2 ? 1 : 0;
            bf[i] ^= plant.which == 3 ? 1 : 0;
        }
        compareFloatInputs(base, n, rs.data(), h.data(), bf.data(), threads, st[1], st[2], st[3], truth,
                           static_cast<uint32_t>(stride));
        done += n;
        progress(done, total);
    }
}

// The device's results of every float input, double-buffered: the device computes and copies chunk k while
// the host compares chunk k - 1.
void deviceFloatInputs(uint32_t chunk, int threads, Plant const& plant, CheckStats* st, uint64_t& done,
                       uint64_t total) {
    // Device results and stream from testing/ (released on every path); declared first, released last.
    qsa::testlib::DeviceBuffer<uint32_t> const dRs(chunk);
    qsa::testlib::DeviceBuffer<uint16_t> const dH(chunk);
    qsa::testlib::DeviceBuffer<uint16_t> const dBf(chunk);
    qsa::testlib::Stream const stream;
    Slot slots[2];
    for (Slot& s : slots) {
        cuda(cudaMallocHost(&s.rs, chunk * sizeof(uint32_t)), "cudaMallocHost");
        cuda(cudaMallocHost(&s.h, chunk * sizeof(uint16_t)), "cudaMallocHost");
        cuda(cudaMallocHost(&s.bf, chunk * sizeof(uint16_t)), "cudaMallocHost");
        cuda(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "cudaEventCreate");
    }
    uint64_t const chunks = (uint64_t(1) << 32) / chunk;
    for (uint64_t k = 0; k <= chunks; ++k) {
        if (k < chunks) {
            Slot& s = slots[k % 2];
            s.base = static_cast<uint32_t>(k * chunk);
            s.n = chunk;
            cuda(launchFloatInputs(s.base, s.n, dRs.get(), dH.get(), dBf.get(), plant, stream.get()),
                 "launchFloatInputs");
            cuda(cudaMemcpyAsync(s.rs, dRs.get(), chunk * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream.get()),
                 "cudaMemcpyAsync");
            cuda(cudaMemcpyAsync(s.h, dH.get(), chunk * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream.get()),
                 "cudaMemcpyAsync");
            cuda(cudaMemcpyAsync(s.bf, dBf.get(), chunk * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream.get()),
                 "cudaMemcpyAsync");
            cuda(cudaEventRecord(s.done, stream.get()), "cudaEventRecord");
        }
        if (k > 0) {
            Slot& s = slots[(k - 1) % 2];
            cuda(cudaEventSynchronize(s.done), "cudaEventSynchronize");
            compareFloatInputs(s.base, s.n, s.rs, s.h, s.bf, threads, st[1], st[2], st[3]);
            done += s.n;
            progress(done, total);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    int threads = 0;
    int chunkLog2 = 26;
    int strideLog2 = 0;
    bool simulate = false;
    std::string checker = "gpu";
    std::string jsonPath;
    CLI::App app{"exhaustive_primitives: the scalar primitives over every float / half / bf16 input, bit for bit"};
    app.add_option("--checker", checker, "gpu: device vs CPU reference; independent: CPU reference vs integer-only")
        ->check(CLI::IsMember({"gpu", "independent"}));
    app.add_option("--threads", threads, "CPU threads comparing (0: all cores)")->check(CLI::NonNegativeNumber);
    app.add_option("--chunk-log2", chunkLog2, "inputs per chunk, log2")->check(CLI::Range(16, 30));
    app.add_option("--json", jsonPath, "write the result as JSON here");
    app.add_flag("--simulate", simulate, "testing only (gpu checker): no CUDA, the reference stands in for the device");
    app.add_option("--stride-log2", strideLog2,
                   "testing only (--simulate or the independent checker): every 2^k-th float")
        ->check(CLI::Range(0, 24));
    CLI11_PARSE(app, argc, argv);
    bool const independent = checker == "independent";
    if (strideLog2 > 0 && !simulate && !independent) {
        std::cerr << "exhaustive_primitives: --stride-log2 needs --simulate (a certification covers every input)\n";
        return 2;
    }
    if (simulate && independent) {
        std::cerr
            << "exhaustive_primitives: --simulate goes with --checker=gpu (the independent checker needs no GPU)\n";
        return 2;
    }
    if (independent)
        kNames = kIndependentNames;
    if (threads == 0) {
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    }
    Truth const truth = independent ? Truth::kIndependent : Truth::kReference;
    bool const onHost = simulate || independent;
    auto const t0 = std::chrono::steady_clock::now();
    json out;
    int rc = 2;
    try {
        Plant const plant = plantFromEnv();
        json device = {{"simulated", simulate}};
        if (independent) {
            device = {{"checker", "independent"}};
        } else if (!simulate) {
            cuda(cudaSetDevice(0), "cudaSetDevice(0)");
            GpuInfo const g = queryGpus().at(0);
            device = {
                {"name", g.name}, {"uuid", g.uuid}, {"sm", std::to_string(g.major) + "." + std::to_string(g.minor)}};
        }
        uint64_t const stride = uint64_t(1) << strideLog2;
        uint64_t const total = (uint64_t(1) << 32) / stride + 2 * 65536;
        uint32_t const chunk = uint32_t(1) << chunkLog2;
        CheckStats st[6];

        // All 2^16 half / bf16 patterns first (tiny).
        std::vector<uint32_t> wh(65536), wb(65536);
        if (onHost) {
            if (independent) {
                referenceRoundTrips(wh.data(), wb.data());
            } else {
                for (uint32_t x = 0; x < 65536u; ++x) {
                    wh[x] = referenceHalfToFloatBits(uint16_t(x));
                    wb[x] = referenceBf16ToFloatBits(uint16_t(x));
                }
            }
            if (plant.input < 65536u) {
                wh[plant.input] ^= plant.which == 4 ? 1u : 0u;
                wb[plant.input] ^= plant.which == 5 ? 1u : 0u;
            }
        } else {
            uint32_t* d = nullptr;
            cuda(cudaMalloc(&d, 2 * 65536 * sizeof(uint32_t)), "cudaMalloc");
            cuda(launchWidenAll(d, d + 65536, plant, nullptr), "launchWidenAll");
            cuda(cudaMemcpy(wh.data(), d, 65536 * sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
            cuda(cudaMemcpy(wb.data(), d + 65536, 65536 * sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
            cuda(cudaFree(d), "cudaFree");
        }
        compareWiden(wh.data(), wb.data(), st[4], st[5], truth);
        uint64_t done = 2 * 65536;
        progress(done, total);

        if (onHost) {
            hostFloatInputs(truth, stride, chunk, threads, plant, st, done, total);
        } else {
            deviceFloatInputs(chunk, threads, plant, st, done, total);
        }
        json checks;
        uint64_t bad = 0;
        for (int w = 1; w <= 5; ++w) {
            uint64_t const expected = w <= 3 ? judgedFloatInputs(w, truth, stride) : 65536;
            checks[kNames[w]] = statsJson(st[w], w, expected, independent);
            bad += st[w].mismatches + (st[w].inputs == expected ? 0 : 1);
            std::printf("%-15s %12llu inputs %10llu mismatches  (%s)\n", kNames[w], (unsigned long long)st[w].inputs,
                        (unsigned long long)st[w].mismatches,
                        independent ? kIndependentFunctions[w] : deviceFunctionName(w));
        }
        out = {{"device", device}, {"checks", checks}, {"error", ""}};
        if (plant.which != 0) {
            out["plant"] = std::string(kNames[plant.which]) + "@" + hex(plant.input, 8);
        }
        if (strideLog2 > 0) {
            out["stride"] = stride;
        }
        rc = bad == 0 ? 0 : 1;
    } catch (std::exception const& e) {
        std::fprintf(stderr, "%s\n", e.what());
        out["error"] = e.what();
        rc = 2;
    }
    out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("exhaustive_primitives: %s in %.1f s\n", rc == 0 ? "all inputs match" : "FAILED",
                out["seconds"].get<double>());
    if (!jsonPath.empty()) {
        std::ofstream f(jsonPath);
        f << out.dump(2) << "\n";
        if (!f) {
            std::fprintf(stderr, "exhaustive_primitives: cannot write %s\n", jsonPath.c_str());
            return 2;
        }
    }
    return rc;
}

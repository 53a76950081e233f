// The plan, parsers, progress and arguments of certify (see certify_core.h).
#include "tools/certify_core.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace qsa {
namespace certify {

namespace {

std::string trim(std::string s) {
    size_t const b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) {
        return "";
    }
    size_t const e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::vector<std::string> splitOn(std::string const& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep)) {
        out.push_back(trim(cur));
    }
    return out;
}

// Decimal digits of an arch token and its optional suffix letter.
struct Arch {
    int cc = 0;
    char suffix = 0;
};

Arch parseArch(std::string const& tok) {
    size_t i = 0;
    while (i < tok.size() && std::isdigit(static_cast<unsigned char>(tok[i]))) {
        ++i;
    }
    bool const ok = i >= 2 && (i == tok.size() || (i + 1 == tok.size() && (tok[i] == 'a' || tok[i] == 'f')));
    if (!ok) {
        throw std::runtime_error("splitArchList: arch '" + tok + "' is not <digits>[a|f] (e.g. 90, 90a, 100f)");
    }
    return Arch{std::stoi(tok.substr(0, i)), i < tok.size() ? tok[i] : char(0)};
}

} // namespace

std::vector<std::string> splitArchList(std::string const& list) {
    std::vector<std::string> out;
    for (std::string const& tok : splitOn(list, ',')) {
        if (tok.empty()) {
            continue;
        }
        parseArch(tok); // validates
        out.push_back(tok);
    }
    return out;
}

SassDecision sassFor(std::string const& sassArchs, int major, int minor) {
    SassDecision d;
    int const dev = major * 10 + minor;
    int best = -1;
    for (std::string const& tok : splitArchList(sassArchs)) {
        Arch const a = parseArch(tok);
        bool runs = false;
        if (a.suffix == 'a') {
            runs = a.cc == dev; // arch-specific: exactly this SM
        } else {
            runs = a.cc / 10 == major && a.cc % 10 <= minor; // same major, minor not above the device's
        }
        if (runs && a.cc > best) {
            best = a.cc;
            d.carried = true;
            d.exact = a.cc == dev;
            d.cubinArch = tok;
        }
    }
    std::string const sm = "sm_" + std::to_string(dev);
    if (d.carried) {
        d.message = "the binary carries SASS for " + sm + " (cubin sm_" + d.cubinArch + ")";
    } else {
        d.message = "the binary carries no SASS for " + sm + " (SASS: " + (sassArchs.empty() ? "none" : sassArchs) +
                    "); its kernels would be JIT-compiled from PTX at load";
    }
    return d;
}

std::string childVisibleDevices(char const* parentValue, int index) {
    if (parentValue == nullptr || trim(parentValue).empty()) {
        return std::to_string(index);
    }
    std::vector<std::string> const ids = splitOn(parentValue, ',');
    if (index < 0 || index >= static_cast<int>(ids.size())) {
        throw std::runtime_error("childVisibleDevices: index " + std::to_string(index) +
                                 " outside CUDA_VISIBLE_DEVICES='" + parentValue + "'");
    }
    return ids[index];
}

std::vector<ContractSpec> const& contracts() {
    static std::vector<ContractSpec> const list = {
        {1, "differential", "differential_test"},
        {2, "index layout", "layout_test"},
        {3, "padding", "padding_test"},
        {4, "determinism", "determinism_test"},
        {5, "batch invariance", "batch_invariance_test"},
        {6, "prefill/decode equivalence", "prefill_decode_test"},
        {7, "pool hygiene", "pool_hygiene_test"},
        {8, "workspace", "workspace_test"},
    };
    return list;
}

std::optional<int64_t> budgetCases(std::string const& propertyId, double scale) {
    // About 4x each property's pre-merge default (the QSA_PROP third argument in properties/*_test.cc).
    static std::map<std::string, int64_t> const table = {
        {"Differential.PrefillMatchesReference", 160},
        {"Differential.DecodeStepsMatchReference", 120},
        {"Layout.PrefillRowsObeyK4", 160},
        {"Layout.DecodeRowsObeyK4", 120},
        {"Padding.PaddedRowsAllMinusOneAndPoisonIgnored", 160},
        {"Padding.ContextLengthsOutsideRangeActClamped", 100},
        {"Padding.InvalidDecodeRowsAreInert", 120},
        {"Determinism.PrefillRepeatsBitwise", 120},
        {"Determinism.TwoStreamsInFlight", 80},
        {"Determinism.DecodeRepeatsBitwise", 100},
        {"BatchInvariance.SequenceAloneVsInBatch", 120},
        {"BatchInvariance.ChunkBoundariesMoved", 80},
        {"BatchInvariance.PoolDoesNotChangeOutIdx", 100},
        {"PrefillDecode.StepsMatchPrefillRows", 120},
        {"PrefillDecode.TiesAtTheSelectionThreshold", 16},
        {"PoolHygiene.PrefillTouchesOnlyContractCells", 160},
        {"PoolHygiene.DecodeTouchesOnlyContractCells", 120},
        {"Workspace.SizesFollowSection6", 800},
        {"Workspace.SizeFunctionsRejectNonPositive", 80},
        {"Workspace.LargerWorkspaceServesSmallerS", 80},
        {"Workspace.UndersizedOrMisalignedThrows", 160},
        {"Workspace.InvalidPoolStatesThrow", 120},
    };
    auto const it = table.find(propertyId);
    if (it == table.end()) {
        return std::nullopt;
    }
    return std::max<int64_t>(1, std::llround(static_cast<double>(it->second) * scale));
}

uint64_t propertySeed(uint64_t base, std::string const& propertyId) {
    // FNV-1a over the id, mixed with the base by splitmix64's finalizer.
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : propertyId) {
        h = (h ^ c) * 1099511628211ull;
    }
    uint64_t z = h ^ (base * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z & 0xFFFFFFFFull;
}

std::string rcParams(std::optional<int64_t> cases, uint64_t seed) {
    std::string s;
    if (cases) {
        s = "max_success=" + std::to_string(*cases) + " ";
    }
    return s + "seed=" + std::to_string(seed);
}

std::vector<std::string> parseGtestList(std::string const& out) {
    std::vector<std::string> ids;
    std::string suite;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        std::string const body = trim(line.substr(0, line.find('#')));
        if (body.empty()) {
            continue;
        }
        if (line[0] != ' ') {
            suite = body; // "Suite." (keeps its dot)
        } else if (!suite.empty()) {
            ids.push_back(suite + body);
        }
    }
    return ids;
}

std::optional<int64_t> parseFalsifiableAfter(std::string const& message) {
    static std::regex const re("Falsifiable after ([0-9]+) tests?");
    std::smatch m;
    if (std::regex_search(message, m, re)) {
        return std::stoll(m[1].str());
    }
    return std::nullopt;
}

GtestOutcome parseGtestJson(std::string const& text, std::string const& propertyId) {
    GtestOutcome o;
    nlohmann::json const j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.contains("testsuites")) {
        return o;
    }
    for (auto const& suite : j["testsuites"]) {
        for (auto const& t : suite.value("testsuite", nlohmann::json::array())) {
            std::string const id = suite.value("name", "") + "." + t.value("name", "");
            if (id != propertyId || t.value("status", "RUN") != "RUN") {
                continue;
            }
            o.found = true;
            for (auto const& f : t.value("failures", nlohmann::json::array())) {
                o.failures.push_back(f.value("failure", ""));
            }
            o.passed = o.failures.empty() && t.value("result", "COMPLETED") == "COMPLETED";
        }
    }
    return o;
}

std::optional<std::pair<uint64_t, uint64_t>> parseProgressLine(std::string const& line) {
    unsigned long long done = 0;
    unsigned long long total = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "progress %llu %llu%c", &done, &total, &tail) >= 2 && done <= total) {
        return std::make_pair(static_cast<uint64_t>(done), static_cast<uint64_t>(total));
    }
    return std::nullopt;
}

CommitSource chooseCommit(std::optional<std::string> env, std::optional<std::string> bundleFile,
                          std::optional<std::string> gitOutput) {
    auto usable = [](std::optional<std::string> const& v) { return v && !trim(*v).empty() && trim(*v) != "unknown"; };
    if (usable(env)) {
        return {trim(*env), "env"};
    }
    if (usable(bundleFile)) {
        return {trim(*bundleFile), "bundle"};
    }
    if (usable(gitOutput)) {
        return {trim(*gitOutput), "git"};
    }
    return {"unknown", "unknown"};
}

std::string formatDuration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) {
        return "--";
    }
    long long const s = std::llround(seconds);
    char buf[32];
    if (s < 60) {
        std::snprintf(buf, sizeof(buf), "%llds", s);
    } else if (s < 3600) {
        std::snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
    } else {
        std::snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    }
    return buf;
}

std::string formatCount(double n) {
    char buf[32];
    if (n < 1000) {
        std::snprintf(buf, sizeof(buf), "%.0f", n);
    } else if (n < 1e6) {
        std::snprintf(buf, sizeof(buf), "%.1fk", n / 1e3);
    } else if (n < 1e9) {
        std::snprintf(buf, sizeof(buf), "%.1fM", n / 1e6);
    } else {
        std::snprintf(buf, sizeof(buf), "%.2fG", n / 1e9);
    }
    return buf;
}

double workFraction(ProgressSnapshot const& s) {
    // Expected shares of the time: the exhaustive checks take about a tenth of a default run.
    double const exShare = s.exhaustiveTotal > 0 ? (s.casesTotal > 0 ? 0.1 : 1.0) : 0.0;
    double const caseShare = s.casesTotal > 0 ? 1.0 - exShare : 0.0;
    double f = 0;
    if (caseShare > 0) {
        f += caseShare * static_cast<double>(s.casesDone) / static_cast<double>(s.casesTotal);
    }
    if (exShare > 0) {
        f += exShare * s.exhaustiveDone / s.exhaustiveTotal;
    }
    return std::min(1.0, std::max(0.0, f));
}

std::string formatProgress(ProgressSnapshot const& s, int barWidth) {
    double const f = workFraction(s);
    std::ostringstream os;
    if (barWidth > 0) {
        int const full = static_cast<int>(f * barWidth);
        os << '[' << std::string(full, '#') << std::string(barWidth - full, '.') << "] ";
    }
    char pct[16];
    std::snprintf(pct, sizeof(pct), "%3d%%", static_cast<int>(f * 100));
    os << pct << "  cases " << s.casesDone << '/' << s.casesTotal;
    double const rate = s.elapsed > 0 ? static_cast<double>(s.casesDone) / s.elapsed : 0;
    char r[32];
    std::snprintf(r, sizeof(r), " (%.1f/s)", rate);
    os << r << "  jobs " << s.jobsDone << '/' << s.jobsTotal;
    if (s.exhaustiveTotal > 0) {
        os << "  exhaustive " << formatCount(s.exhaustiveDone) << '/' << formatCount(s.exhaustiveTotal);
    }
    if (s.failures > 0) {
        os << "  FAILURES " << s.failures;
    }
    os << "  elapsed " << formatDuration(s.elapsed);
    os << "  ETA " << (f > 0.001 && f < 1 ? formatDuration(s.elapsed * (1 - f) / f) : (f >= 1 ? "0s" : "--"));
    return os.str();
}

std::optional<Options> parseArgs(int argc, char const* const* argv, std::string const& defaultOutDir) {
    Options o;
    std::vector<std::string> cases;
    bool noExhaustive = false;
    bool exhaustiveOnly = false;
    CLI::App app{"certify: runs every contract's properties with certification budgets and the exhaustive scalar "
                 "checks on every visible GPU, then writes certificate.json and certificate.md"};
    app.add_option("--out", o.outDir, "certificate directory (default: $BUILD_WORKING_DIRECTORY/certificate)");
    app.add_option("--scale", o.scale, "multiplies every property's case budget")->check(CLI::PositiveNumber);
    app.add_option("--seed", o.seed, "base seed; each property's seed is derived from it and its name");
    app.add_option("--jobs-per-gpu", o.jobsPerGpu, "concurrent child processes per GPU (0: from the core count)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--gpus", o.gpus, "visible GPU indices to certify (default: all)")->delimiter(',');
    app.add_option("--contracts", o.only, "contract numbers 1-8 to run (default: all)")
        ->delimiter(',')
        ->check(CLI::Range(1, 8));
    app.add_option("--cases", cases, "per-property budget override Suite.Name=N (repeatable)");
    app.add_flag("--no-exhaustive", noExhaustive, "skip the exhaustive scalar checks");
    app.add_flag("--exhaustive-only", exhaustiveOnly, "run only the exhaustive scalar checks");
    app.add_flag("--allow-ptx-jit", o.allowPtxJit, "certify even when the binary lacks SASS for a GPU");
    app.add_option("--progress", o.progress, "progress display")
        ->check(CLI::IsMember({"auto", "bar", "lines", "none"}));
    app.add_option("--bin-dir", o.binDir, "directory holding properties/<test> and tools/exhaustive_primitives");
    app.add_option("--exhaustive-threads", o.exhaustiveThreads, "CPU threads per exhaustive check (0: cores/GPUs)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--child-timeout", o.childTimeout, "seconds before a child is killed and counted as failed")
        ->check(CLI::PositiveNumber);
    app.add_option("--time-limit", o.timeLimitMinutes,
                   "minutes after which no new child starts; what is left FAILs as not run (0: no limit)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--list", o.list, "print the plan (properties, budgets, seeds) and exit");
    app.add_flag("--cpu-dry-run", o.cpuDryRun, "test certify itself: CPU property variants, no CUDA, fake GPUs");
    app.add_option("--fake-gpus", o.fakeGpus, "GPUs pretended by --cpu-dry-run")->check(CLI::Range(1, 16));
    app.add_option("--fake-sm", o.fakeSm, "SM (e.g. 90) of the GPUs pretended by --cpu-dry-run")
        ->check(CLI::Range(10, 999));
    try {
        app.parse(argc, argv);
    } catch (CLI::CallForHelp const& e) {
        app.exit(e);
        return std::nullopt;
    } catch (CLI::ParseError const& e) {
        throw std::runtime_error(std::string("certify: ") + e.what() + "\n" + app.help());
    }
    for (std::string const& c : cases) {
        size_t const eq = c.rfind('=');
        long long n = 0;
        try {
            n = eq == std::string::npos ? 0 : std::stoll(c.substr(eq + 1));
        } catch (std::exception const&) {
            n = 0;
        }
        if (eq == std::string::npos || eq == 0 || n <= 0) {
            throw std::runtime_error("certify: --cases expects Suite.Name=N with N > 0, got '" + c + "'");
        }
        o.cases[c.substr(0, eq)] = n;
    }
    if (noExhaustive && exhaustiveOnly) {
        throw std::runtime_error("certify: --no-exhaustive and --exhaustive-only exclude each other");
    }
    o.exhaustive = !noExhaustive;
    o.properties = !exhaustiveOnly;
    if (o.outDir.empty()) {
        o.outDir = defaultOutDir;
    }
    std::sort(o.gpus.begin(), o.gpus.end());
    o.gpus.erase(std::unique(o.gpus.begin(), o.gpus.end()), o.gpus.end());
    std::sort(o.only.begin(), o.only.end());
    o.only.erase(std::unique(o.only.begin(), o.only.end()), o.only.end());
    return o;
}

} // namespace certify
} // namespace qsa

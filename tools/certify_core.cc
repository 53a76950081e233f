// The plan, parsers, progress and arguments of certify (see certify_core.h).
#include "tools/certify_core.h"

#include <CLI/CLI.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <set>
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

int runCapture(std::string const& cmd, std::string& out, std::FILE* echo) {
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr)
        return -1;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p) != nullptr) {
        out += buf;
        if (echo != nullptr)
            std::fputs(buf, echo);
    }
    int const status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

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

std::optional<DriverModule> parseNvidiaDriverVersion(std::string const& procText) {
    std::istringstream in(procText);
    std::string line;
    static std::string const kTag = "NVRM version:";
    while (std::getline(in, line)) {
        size_t const at = line.find(kTag);
        if (at == std::string::npos)
            continue;
        // Blanks collapsed: the module prints two spaces around the version.
        std::istringstream words(line.substr(at + kTag.size()));
        std::string w, module;
        while (words >> w)
            module += (module.empty() ? "" : " ") + w;
        // "... Kernel Module [for <arch>]  <release>  ...": the first dotted number after "Kernel Module"
        // (x86_64 / aarch64 are not dotted numbers).
        static std::regex const re("Kernel Module.*?\\s([0-9]+\\.[0-9]+(\\.[0-9]+)*)(\\s|$)");
        std::smatch m;
        if (!std::regex_search(module, m, re))
            return std::nullopt;
        return DriverModule{m[1].str(), module};
    }
    return std::nullopt;
}

std::optional<FastJudged> parseFastLine(std::string const& line) {
    std::istringstream in(line);
    std::string tag, w;
    FastJudged f;
    if (!(in >> tag >> f.id) || tag != "QSA_FAST" || f.id.find('=') != std::string::npos)
        return std::nullopt;
    std::map<std::string, int64_t*> const counts = {{"judged_elements", &f.judgedElements},
                                                    {"unjudged_elements", &f.unjudgedElements},
                                                    {"judged_rows", &f.judgedRows},
                                                    {"ambiguous_rows", &f.ambiguousRows}};
    std::set<std::string> seen;
    while (in >> w) {
        size_t const eq = w.find('=');
        if (eq == std::string::npos)
            continue;
        std::string const key = w.substr(0, eq), value = w.substr(eq + 1);
        auto const it = counts.find(key);
        if (it != counts.end()) {
            if (value.empty() || value.size() > 18 ||
                !std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); }))
                return std::nullopt;
            *it->second = std::stoll(value);
        } else if (key == "eps_r") {
            if (value.empty())
                return std::nullopt;
            f.epsR = value;
        } else {
            continue;
        }
        seen.insert(key);
    }
    if (seen.size() != counts.size() + 1)
        return std::nullopt;
    return f;
}

std::string shortCount(int64_t n) {
    static char const* const kUnits[] = {"k", "M", "G", "T"};
    if (n < 1000)
        return std::to_string(n);
    double v = double(n);
    int u = -1;
    while (v >= 999.95 && u < 3) {
        v /= 1000.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f%s", v, kUnits[u]);
    return buf;
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

extern char const kContractsTsv[]; // properties/contracts.tsv (from contracts.bzl), embedded by tools/BUILD

namespace {

// kind, number, name, levels, gpu binary, mutant rank
std::vector<ContractSpec> parseContracts(bool stage) {
    std::vector<ContractSpec> out;
    std::istringstream in(kContractsTsv);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> const f = splitOn(line, '\t');
        if (f.size() < 5 || (f[0] == "stage") != stage || (f[0] != "stage" && f[0] != "contract"))
            continue;
        ContractSpec c;
        c.number = std::stoi(f[1]);
        c.name = f[2];
        c.gpuBinary = f[4];
        std::string const base = f[4].substr(f[4].find('/') + 1);
        c.test = !stage && base.size() > 4 && base.compare(base.size() - 4, 4, "_gpu") == 0
                     ? base.substr(0, base.size() - 4)
                     : "";
        out.push_back(c);
    }
    return out;
}

} // namespace

std::vector<ContractSpec> const& contracts() {
    static std::vector<ContractSpec> const list = parseContracts(false);
    return list;
}

std::vector<ContractSpec> const& stageProperties() {
    static std::vector<ContractSpec> const list = parseContracts(true);
    return list;
}

double budgetScale(double scale) {
    return kCertifyBudgetFactor * scale;
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

std::vector<GtestTest> parseGtestJsonAll(std::string const& text) {
    std::vector<GtestTest> out;
    nlohmann::json const j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.contains("testsuites")) {
        return out;
    }
    for (auto const& suite : j["testsuites"]) {
        for (auto const& t : suite.value("testsuite", nlohmann::json::array())) {
            if (t.value("status", "RUN") != "RUN") {
                continue;
            }
            GtestTest g;
            g.id = suite.value("name", "") + "." + t.value("name", "");
            for (auto const& f : t.value("failures", nlohmann::json::array())) {
                g.failures.push_back(f.value("failure", ""));
            }
            std::string const result = t.value("result", "COMPLETED");
            g.status = !g.failures.empty()     ? "FAIL"
                       : result == "SKIPPED"   ? "SKIPPED"
                       : result == "COMPLETED" ? "PASS"
                                               : "FAIL";
            out.push_back(g);
        }
    }
    return out;
}

std::vector<FailedCheck> parseFailedChecks(std::string const& text) {
    static std::regex const re("QSA_CHECK_FAILED (\\S+) level=([a-z]+) profile=([a-z]+)");
    std::vector<FailedCheck> out;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
        FailedCheck const c{(*it)[1].str(), (*it)[2].str(), (*it)[3].str()};
        bool const dup = std::any_of(out.begin(), out.end(), [&](FailedCheck const& o) {
            return o.id == c.id && o.level == c.level && o.profile == c.profile;
        });
        if (!dup) {
            out.push_back(c);
        }
    }
    return out;
}

std::vector<std::string> linesStartingWith(std::string const& text, std::string const& prefix) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::string const t = trim(line);
        if (t.rfind(prefix, 0) == 0 && std::find(out.begin(), out.end(), t) == out.end()) {
            out.push_back(t);
        }
    }
    return out;
}

std::optional<int64_t> parseSeedLineCases(std::string const& text, std::string const& propertyId) {
    for (std::string const& l : linesStartingWith(text, "QSA_SEED " + propertyId + " ")) {
        size_t const at = l.find(" cases=");
        if (at != std::string::npos) {
            return std::stoll(l.substr(at + 7));
        }
    }
    return std::nullopt;
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
    std::pair<std::optional<std::string> const*, char const*> const sources[] = {
        {&env, "env"}, {&bundleFile, "bundle"}, {&gitOutput, "git"}};
    for (auto const& [value, source] : sources) {
        std::string const v = *value ? trim(**value) : "";
        if (!v.empty() && v != "unknown")
            return {v, source};
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
    // Without planned case counts (budgets are a factor the children apply), finished jobs measure the work.
    bool const byCases = s.casesTotal > 0;
    int const otherJobs = s.jobsTotal - (s.exhaustiveTotal > 0 ? 1 : 0);
    bool const byJobs = !byCases && otherJobs > 0;
    double const exShare = s.exhaustiveTotal > 0 ? (byCases || byJobs ? 0.1 : 1.0) : 0.0;
    double const caseShare = byCases || byJobs ? 1.0 - exShare : 0.0;
    double f = 0;
    if (caseShare > 0 && byCases) {
        f += caseShare * static_cast<double>(s.casesDone) / static_cast<double>(s.casesTotal);
    } else if (caseShare > 0) {
        f += caseShare * std::min(1.0, static_cast<double>(s.jobsDone) / static_cast<double>(s.jobsTotal));
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

// CLI::PositiveNumber reports 0 as "Value 0 not in range 0.000000 to 1.797693e+308": say what is wrong instead.
CLI::Validator const kPositive(
    [](std::string& v) {
        char* end = nullptr;
        double const d = std::strtod(v.c_str(), &end);
        return !v.empty() && *end == '\0' && d > 0 ? std::string() : "must be a number > 0, got '" + v + "'";
    },
    "> 0");

std::optional<Options> parseArgs(int argc, char const* const* argv, std::string const& defaultOutDir) {
    Options o;
    std::vector<std::string> cases;
    bool noExhaustive = false;
    bool exhaustiveOnly = false;
    CLI::App app{"certify: runs every contract's properties with certification budgets and the exhaustive scalar "
                 "checks on every visible GPU, then writes certificate.json and certificate.md"};
    app.add_option("--out", o.outDir, "certificate directory (default: $BUILD_WORKING_DIRECTORY/certificate)");
    app.add_option("--scale", o.scale, "multiplies every property's case budget")->check(kPositive);
    app.add_option("--seed", o.seed, "base seed; each property's seed is derived from it and its name");
    app.add_option("--jobs-per-gpu", o.jobsPerGpu, "concurrent child processes per GPU (0: from the core count)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--gpus", o.gpus, "visible GPU indices to certify (default: all)")->delimiter(',');
    app.add_option("--contracts", o.only, "contract numbers 1-8 to run (default: all)")
        ->delimiter(',')
        ->check(CLI::Range(1, 8));
    app.add_option("--cases", cases, "per-property budget override Suite.Name=N (repeatable)");
    app.add_flag("--no-exhaustive", noExhaustive, "skip the exhaustive scalar checks");
    bool noReplay = false;
    bool noStage = false;
    app.add_flag("--no-replay", noReplay, "skip the fixture replay");
    app.add_flag("--no-stage-tests", noStage, "skip this project's kernel stage tests");
    app.add_flag("--exhaustive-only", exhaustiveOnly, "run only the exhaustive scalar checks");
    app.add_flag("--allow-ptx-jit", o.allowPtxJit, "certify even when the binary lacks SASS for a GPU");
    app.add_option("--progress", o.progress, "progress display")
        ->check(CLI::IsMember({"auto", "bar", "lines", "none"}));
    app.add_option("--bin-dir", o.binDir, "directory holding properties/<test> and tools/exhaustive_primitives");
    app.add_option("--exhaustive-threads", o.exhaustiveThreads, "CPU threads per exhaustive check (0: cores/GPUs)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--child-timeout", o.childTimeout, "seconds before a child is killed and counted as failed")
        ->check(kPositive);
    app.add_option("--time-limit", o.timeLimitMinutes,
                   "minutes after which no new child starts; what is left FAILs as not run (0: no limit)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--list", o.list, "print the plan (properties, budgets, seeds) and exit");
    app.add_flag("--cpu-dry-run", o.cpuDryRun, "test certify itself: CPU property variants, no CUDA, fake GPUs");
    app.add_option("--fake-gpus", o.fakeGpus, "GPUs pretended by --cpu-dry-run")->check(CLI::Range(1, 16));
    app.add_option("--fake-sm", o.fakeSm, "SM (e.g. 90) of the GPUs pretended by --cpu-dry-run")
        ->check(CLI::Range(10, 999));
    app.add_option("--impl-lib", o.implLib,
                   "the shared library under test (the kit's build, --//api:impl=//api:loaded; default "
                   "$QSA_IMPL_LIB): checked first, then passed to every child as QSA_IMPL_LIB");
    bool noSanitizers = false;
    app.add_option("--sanitizers", o.sanitize.tools, "compute-sanitizer tools over the GPU tests (certify_sanitize.h)")
        ->delimiter(',')
        ->check(CLI::IsMember({"memcheck", "racecheck", "initcheck", "synccheck"}));
    app.add_flag("--no-sanitizers", noSanitizers, "skip the compute-sanitizer part (the certificate says not run)");
    app.add_option("--sanitize-jobs", o.sanitize.jobs, "sanitizer pairs at a time")->check(kPositive);
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
    o.sanitize.enabled = !noSanitizers;
    o.exhaustive = !noExhaustive;
    o.properties = !exhaustiveOnly;
    o.replayFixtures = !noReplay && !exhaustiveOnly;
    o.stageTests = !noStage && !exhaustiveOnly;
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

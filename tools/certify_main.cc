// certify: one command that certifies every visible GPU against the contract and writes a certificate.
//   bazel run //tools:certify -- [--scale F] [--out DIR] [--allow-ptx-jit] ...     (--help lists everything)
//   [--//api:impl=//their:lib]  certifies another implementation; QSA_LEVELS / QSA_PROFILE select what is judged
// For each GPU a worker pool runs, pinned with CUDA_VISIBLE_DEVICES, the whole portable suite: the exhaustive
// scalar checks, every property of every contract (one child per property, RC_PARAMS="seed=S" with fixed seeds,
// QSA_BUDGET_SCALE = one factor for every budget) and the fixture replay; when //api:impl is //kernels:qsa_kernels
// also this project's stage properties and kernel stage tests. certificate.json / certificate.md give a verdict
// per level and profile (contract section 8). Exit 0 PASS, 1 FAIL, 2 setup error, 3 refused (no SASS for a GPU).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "api/impl_label.h"
#include "checks/levels.h"
#include "tools/certify_child.h"
#include "tools/certify_core.h"
#include "tools/certify_cuda.h"
#include "tools/certify_sanitize.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace qsa::certify;

namespace qsa {
namespace certify {
extern char const kKernelStageTests[]; // kernels/stage_tests.bzl, embedded by tools/BUILD
} // namespace certify
} // namespace qsa

namespace {

namespace checks = qsa::checks;

using Clock = std::chrono::steady_clock;

std::string envOr(char const* name, std::string const& fallback) {
    char const* v = std::getenv(name);
    return v != nullptr && *v != 0 ? v : fallback;
}

std::optional<std::string> readFile(fs::path const& p) {
    std::ifstream f(p);
    if (!f) {
        return std::nullopt;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::optional<std::string> runCapture(std::string const& cmd) {
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) {
        return std::nullopt;
    }
    std::string out;
    char buf[256];
    while (fgets(buf, sizeof(buf), p) != nullptr) {
        out += buf;
    }
    return pclose(p) == 0 ? std::optional<std::string>(out) : std::nullopt;
}

// ---- where things are --------------------------------------------------------------------------------

struct Layout {
    fs::path exe;          // this binary
    fs::path runfilesRoot; // <...>.runfiles (holds qsa_indexer/)
    fs::path bundleRoot;   // GPU bundle root (MANIFEST + COMMIT), empty when not in a bundle
    std::string binDir;    // --bin-dir
};

Layout findLayout(char const* argv0, std::string const& binDir) {
    Layout l;
    std::error_code ec;
    l.exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
        l.exe = fs::absolute(argv0);
    }
    l.binDir = binDir;
    std::vector<fs::path> candidates;
    for (char const* v : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
        if (std::getenv(v) != nullptr) {
            candidates.emplace_back(std::getenv(v));
        }
    }
    candidates.push_back(l.exe.string() + ".runfiles");
    candidates.push_back(fs::absolute(std::string(argv0) + ".runfiles"));
    fs::path const cwd = fs::current_path();
    if (cwd.filename() == "qsa_indexer") {
        candidates.push_back(cwd.parent_path()); // `bazel run` starts in <runfiles>/qsa_indexer
    }
    for (fs::path const& c : candidates) {
        if (fs::is_directory(c / "qsa_indexer", ec)) {
            l.runfilesRoot = c;
            break;
        }
    }
    // The bundle of tools/gpu_bundle.sh: <root>/tools/<pkg>/<name>, with <root>/MANIFEST and <root>/COMMIT.
    for (fs::path d = l.exe.parent_path(); !d.empty() && d != d.root_path(); d = d.parent_path()) {
        if (fs::exists(d / "MANIFEST", ec) && fs::exists(d / "COMMIT", ec)) {
            l.bundleRoot = d;
            break;
        }
    }
    return l;
}

// A binary by its workspace-relative path (e.g. "properties/layout_test_gpu"); empty when nowhere.
fs::path locate(Layout const& l, std::string const& rel) {
    std::vector<fs::path> c;
    if (!l.binDir.empty()) {
        c.push_back(fs::path(l.binDir) / rel);
    }
    if (!l.runfilesRoot.empty()) {
        c.push_back(l.runfilesRoot / "qsa_indexer" / rel);
    }
    if (!l.bundleRoot.empty()) {
        c.push_back(l.bundleRoot / "tests" / rel);
        c.push_back(l.bundleRoot / "tools" / rel);
    }
    std::error_code ec;
    for (fs::path const& p : c) {
        if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) {
            return p;
        }
    }
    return {};
}

// ---- the plan -----------------------------------------------------------------------------------------

struct PropertyPlan {
    int contract;
    std::string id;
    std::optional<int64_t> cases; // an explicit --cases override; else the default times budgetScale()
    uint64_t seed;
    checks::CheckInfo info; // level and profile (checks/registry.tsv)
    bool judged = true;     // selected by QSA_LEVELS / QSA_PROFILE; a property not judged is not run
};

// A whole test binary run as one child: the fixture replay, a stage property binary, a kernel stage test.
struct SuitePlan {
    std::string name; // "fixture replay", "stage properties", "kernel stage tests"
    std::string rel;  // workspace-relative binary
    fs::path exe;
    std::vector<std::string> args;
};

struct ContractPlan {
    ContractSpec spec;
    std::string rel; // workspace-relative binary path
    fs::path exe;
    std::vector<PropertyPlan> properties;
};

// Environment variables of a `bazel test` / bundle run that must not leak into a child.
std::vector<std::string> const kUnset = {"CUDA_VISIBLE_DEVICES",
                                         "RC_PARAMS",
                                         "TEST_UNDECLARED_OUTPUTS_DIR",
                                         "TEST_TMPDIR",
                                         "TEST_SHARD_INDEX",
                                         "TEST_TOTAL_SHARDS",
                                         "TEST_SHARD_STATUS_FILE",
                                         "GTEST_SHARD_INDEX",
                                         "GTEST_TOTAL_SHARDS",
                                         "GTEST_OUTPUT",
                                         "GTEST_FILTER",
                                         "XML_OUTPUT_FILE",
                                         "TEST_TARGET",
                                         "TEST_PREMATURE_EXIT_FILE",
                                         "TEST_SRCDIR",
                                         "TEST_WORKSPACE",
                                         "RUNFILES_DIR",
                                         "RUNFILES_MANIFEST_FILE",
                                         "JAVA_RUNFILES"};

// TEST_SRCDIR / cwd of a child binary: its own runfiles next to it, else certify's.
void runfilesEnv(Layout const& l, fs::path const& exe, ChildSpec& spec) {
    std::error_code ec;
    fs::path root = exe.string() + ".runfiles";
    if (!fs::is_directory(root / "qsa_indexer", ec)) {
        root = l.runfilesRoot;
    }
    if (!root.empty()) {
        spec.env["TEST_SRCDIR"] = root.string();
        spec.env["RUNFILES_DIR"] = root.string();
        spec.env["TEST_WORKSPACE"] = "qsa_indexer";
        spec.cwd = (root / "qsa_indexer").string();
    }
}

// ---- shared progress state -------------------------------------------------------------------------------

struct Progress {
    std::mutex m;
    ProgressSnapshot s;
    std::vector<double> exhaustiveDone; // per GPU
    Clock::time_point start = Clock::now();
    std::string mode; // bar | lines | none
    bool barShown = false;
    Clock::time_point lastLine = Clock::now();

    // An event line (a job finished); in bar mode printed above the bar.
    void event(std::string const& line) {
        std::lock_guard<std::mutex> g(m);
        if (mode == "none") {
            return;
        }
        if (mode == "bar" && barShown) {
            std::printf("\r\033[K");
        }
        std::printf("%s\n", line.c_str());
        if (mode == "bar") {
            drawLocked();
        }
        std::fflush(stdout);
    }
    void drawLocked() {
        s.elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        s.exhaustiveDone = 0;
        for (double d : exhaustiveDone) {
            s.exhaustiveDone += d;
        }
        if (mode == "bar") {
            std::printf("\r\033[K%s", formatProgress(s, 30).c_str());
            barShown = true;
        } else if (mode == "lines") {
            std::printf("%s\n", formatProgress(s, 0).c_str());
        }
        std::fflush(stdout);
    }
    void tick() {
        std::lock_guard<std::mutex> g(m);
        if (mode == "bar") {
            drawLocked();
        } else if (mode == "lines" && Clock::now() - lastLine > std::chrono::seconds(30)) {
            lastLine = Clock::now();
            drawLocked();
        }
    }
    void finish() {
        std::lock_guard<std::mutex> g(m);
        if (mode != "none") {
            if (mode == "bar") {
                drawLocked();
            }
            std::printf("\n");
            std::fflush(stdout);
        }
    }
};

double secondsSince(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string safeName(std::string s) {
    for (char& c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
            c = '_';
        }
    }
    return s;
}

std::vector<std::string> capturedFixtures(fs::path const& outputs) {
    std::vector<std::string> out;
    std::error_code ec;
    fs::path const dir = outputs / "captured";
    if (fs::is_directory(dir, ec)) {
        for (auto const& e : fs::directory_iterator(dir, ec)) {
            if (e.is_directory()) {
                out.push_back(e.path().string());
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// ---- jobs ---------------------------------------------------------------------------------------------------

struct GpuRun {
    GpuInfo gpu;
    fs::path dir;
    json exhaustive;                        // filled by the exhaustive job
    std::map<std::string, json> properties; // id -> result
    std::map<std::string, json> suites;     // binary -> result
};

// The files of one gtest child under its GPU's run directory.
struct ChildFiles {
    fs::path outputs, tmp, log, gtestJson;
};

// Runs a gtest binary as one child on the run's GPU: CUDA_VISIBLE_DEVICES, RC_PARAMS = rc, the budget scale, its
// own undeclared-outputs and temp directories (the temp one removed after), runfiles, its log and gtest JSON
// under `tag`. Returns its result; `secs` gets its wall time.
ChildResult runGtestChild(Layout const& l, GpuRun const& run, Options const& o, std::string const& tag,
                          fs::path const& exe, std::vector<std::string> args, std::string const& rc, ChildFiles& f,
                          double& secs) {
    f = {run.dir / "outputs" / tag, run.dir / "tmp" / tag, run.dir / "logs" / (tag + ".log"),
         run.dir / "logs" / (tag + ".json")};
    fs::create_directories(f.outputs);
    fs::create_directories(f.tmp);
    ChildSpec spec;
    spec.exe = exe.string();
    spec.args = std::move(args);
    spec.args.push_back("--gtest_output=json:" + f.gtestJson.string());
    spec.args.push_back("--gtest_color=no");
    spec.unset = kUnset;
    spec.env = {{"CUDA_VISIBLE_DEVICES", run.gpu.visibleId},
                {"RC_PARAMS", rc},
                {"QSA_BUDGET_SCALE", std::to_string(budgetScale(o.scale))},
                {"TEST_UNDECLARED_OUTPUTS_DIR", f.outputs.string()},
                {"TEST_TMPDIR", f.tmp.string()},
                {"TMPDIR", f.tmp.string()}};
    runfilesEnv(l, exe, spec);
    spec.logPath = f.log.string();
    spec.timeoutSeconds = o.childTimeout;
    auto const t0 = Clock::now();
    ChildResult r = runChild(spec, [](std::string const&) {});
    secs = secondsSince(t0);
    std::error_code ec;
    fs::remove_all(f.tmp, ec);
    return r;
}

json runProperty(Layout const& l, ContractPlan const& c, PropertyPlan const& p, GpuRun& run, Options const& o,
                 Progress& progress) {
    std::string const rc = rcParams(p.cases, p.seed);
    ChildFiles f;
    double secs = 0;
    ChildResult const r = runGtestChild(l, run, o, safeName(p.id), c.exe, {"--gtest_filter=" + p.id}, rc, f, secs);

    json res = {{"id", p.id},
                {"seed", p.seed},
                {"level", p.info.level},
                {"profile", p.info.profile},
                {"rc_params", rc},
                {"budget_scale", budgetScale(o.scale)},
                {"cases_planned", p.cases ? json(*p.cases) : json()},
                {"seconds", secs},
                {"log", f.log.string()},
                {"exit", r.describe()},
                {"fixtures", capturedFixtures(f.outputs)},
                {"coverage", linesStartingWith(r.output, "QSA_COVERAGE ")}};
    GtestOutcome const g = parseGtestJson(readFile(f.gtestJson).value_or(""), p.id);
    json failures = json::array();
    for (std::string const& f : g.failures) {
        failures.push_back(f.substr(0, 4000));
    }
    bool const pass = r.ok() && g.found && g.passed;
    if (!pass && failures.empty()) {
        std::string const tail = r.output.size() > 2000 ? r.output.substr(r.output.size() - 2000) : r.output;
        failures.push_back(std::string(g.found ? "" : "property did not run; ") + "child " + r.describe() +
                           "; output tail:\n" + tail);
    }
    res["failures"] = failures;
    res["verdict"] = pass ? "PASS" : "FAIL";
    // Cases run: the child's QSA_SEED line when it passed, RapidCheck's "Falsifiable after N tests" when it failed.
    std::optional<int64_t> const seedCases = parseSeedLineCases(r.output, p.id);
    json ran = seedCases ? json(*seedCases) : p.cases ? json(*p.cases) : json();
    if (!pass) {
        ran = json();
        for (std::string const& f : g.failures) {
            if (auto n = parseFalsifiableAfter(f)) {
                ran = *n;
            }
        }
    }
    res["cases_run"] = ran;
    {
        std::lock_guard<std::mutex> g2(progress.m);
        progress.s.casesDone += p.cases.value_or(0);
        progress.s.jobsDone += 1;
        progress.s.failures += pass ? 0 : 1;
    }
    char line[768];
    std::snprintf(line, sizeof(line), "[gpu %d] %s %-52s %6s cases %7.1f s  level=%s profile=%s%s", run.gpu.index,
                  pass ? "PASS" : "FAIL", p.id.c_str(),
                  ran.is_number_integer() ? std::to_string(ran.get<int64_t>()).c_str() : "dflt", secs,
                  p.info.level.c_str(), p.info.profile.c_str(),
                  pass ? "" : ("  (" + r.describe() + ", log " + f.log.string() + ")").c_str());
    progress.event(line);
    return res;
}

// A whole gtest binary as one child; every test becomes a check with its registry level/profile (the fixture
// replay's tests name their failed checks in QSA_CHECK_FAILED lines).
json runSuite(Layout const& l, SuitePlan const& s, GpuRun& run, Options const& o, checks::Selection const& sel,
              Progress& progress) {
    ChildFiles f;
    double secs = 0;
    ChildResult const r = runGtestChild(l, run, o, safeName(s.rel), s.exe, s.args,
                                        "seed=" + std::to_string(propertySeed(o.seed, s.rel)), f, secs);
    json tests = json::array();
    int failed = 0;
    for (GtestTest const& t : parseGtestJsonAll(readFile(f.gtestJson).value_or(""))) {
        checks::CheckInfo const info = checks::lookup(t.id);
        std::string all;
        for (std::string const& f : t.failures) {
            all += f + "\n";
        }
        json fc = json::array();
        for (FailedCheck const& c : parseFailedChecks(all)) {
            fc.push_back({{"id", c.id}, {"level", c.level}, {"profile", c.profile}});
        }
        // Registered tests (stage tests, stage properties) are judged by the registry; the replay's tests by the
        // checks they name (their binary prints QSA_NOT_JUDGED and skips what QSA_LEVELS / QSA_PROFILE drop).
        bool const judged = info.registered() ? sel.judged(info) : t.status != "SKIPPED";
        std::string const verdict = !judged ? "NOT_JUDGED" : t.status == "PASS" ? "PASS" : "FAIL";
        failed += verdict == "FAIL";
        json failures = json::array();
        for (std::string const& f : t.failures) {
            failures.push_back(f.substr(0, 4000));
        }
        tests.push_back({{"id", t.id},
                         {"level", info.registered() ? info.level : "per check"},
                         {"profile", info.registered() ? info.profile : "per check"},
                         {"verdict", verdict},
                         {"failed_checks", fc},
                         {"failures", failures}});
    }
    json res = {{"name", s.name},
                {"binary", s.rel},
                {"seconds", secs},
                {"log", f.log.string()},
                {"exit", r.describe()},
                {"tests", tests},
                {"not_judged_lines", linesStartingWith(r.output, "QSA_NOT_JUDGED ")},
                {"coverage", linesStartingWith(r.output, "QSA_COVERAGE ")},
                {"fixtures", capturedFixtures(f.outputs)}};
    if (tests.empty() || (!r.ok() && failed == 0)) {
        std::string const tail = r.output.size() > 2000 ? r.output.substr(r.output.size() - 2000) : r.output;
        res["error"] = "child " + r.describe() + (tests.empty() ? ", no test results" : "") + "; output tail:\n" + tail;
    }
    {
        std::lock_guard<std::mutex> g(progress.m);
        progress.s.jobsDone += 1;
        progress.s.failures += failed > 0 || res.contains("error") ? 1 : 0;
    }
    char line[512];
    std::snprintf(line, sizeof(line), "[gpu %d] %s %-52s %4zu tests %7.1f s%s", run.gpu.index,
                  failed == 0 && !res.contains("error") ? "PASS" : "FAIL", (s.name + " " + s.rel).c_str(), tests.size(),
                  secs,
                  failed ? ("  (" + std::to_string(failed) + " failed, log " + f.log.string() + ")").c_str() : "");
    progress.event(line);
    return res;
}

json runExhaustive(Layout const& l, GpuRun& run, Options const& o, int threads, Progress& progress, size_t slot) {
    fs::path const exe = locate(l, "tools/exhaustive_primitives");
    fs::path const log = run.dir / "logs" / "exhaustive_primitives.log";
    fs::path const out = run.dir / "exhaustive.json";
    auto const t0 = Clock::now();
    json res;
    if (exe.empty()) {
        res = {{"error", "tools/exhaustive_primitives not found (runfiles, bundle or --bin-dir)"}};
    } else {
        ChildSpec spec;
        spec.exe = exe.string();
        spec.args = {"--threads=" + std::to_string(threads), "--json=" + out.string()};
        if (o.cpuDryRun) {
            spec.args.push_back("--simulate");
            spec.args.push_back("--stride-log2=16");
        }
        spec.unset = kUnset;
        spec.env = {{"CUDA_VISIBLE_DEVICES", run.gpu.visibleId}};
        spec.logPath = log.string();
        spec.timeoutSeconds = o.childTimeout;
        std::error_code ec;
        fs::remove(out, ec);
        ChildResult const r = runChild(spec, [&](std::string const& line) {
            if (auto pr = parseProgressLine(line)) {
                std::lock_guard<std::mutex> g(progress.m);
                progress.exhaustiveDone[slot] = static_cast<double>(pr->first);
            }
        });
        json const j = json::parse(readFile(out).value_or(""), nullptr, false);
        if (j.is_object()) {
            res = j;
        }
        if (!j.is_object() || (!r.ok() && r.exitCode != 1)) {
            res["error"] = "exhaustive_primitives " + r.describe() + (j.is_object() ? "" : ", no result file") + "; " +
                           res.value("error", "");
        }
        if (j.is_object() && j.contains("device") && j["device"].contains("uuid") && !o.cpuDryRun &&
            j["device"]["uuid"] != run.gpu.uuid) {
            res["error"] = "exhaustive child ran on " + j["device"]["uuid"].get<std::string>() + ", expected " +
                           run.gpu.uuid + " (CUDA_VISIBLE_DEVICES mapping)";
        }
    }
    res["seconds"] = secondsSince(t0);
    res["log"] = log.string();
    res.erase("device"); // the GPU is described once, above
    bool bad = !res.value("error", "").empty();
    json const checks = res.value("checks", json::object()); // items() must not outlive it
    for (auto const& [name, c] : checks.items()) {
        bad = bad || c.value("mismatches", 0) != 0;
    }
    {
        std::lock_guard<std::mutex> g(progress.m);
        progress.s.jobsDone += 1;
        progress.s.failures += bad ? 1 : 0;
    }
    char line[512];
    std::snprintf(line, sizeof(line), "[gpu %d] %s exhaustive scalar checks %7.1f s%s", run.gpu.index,
                  bad ? "FAIL" : "PASS", res["seconds"].get<double>(),
                  bad ? ("  (log " + log.string() + ")").c_str() : "");
    progress.event(line);
    return res;
}

std::string utcNow() {
    std::time_t const t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

std::string driverRelease() {
    std::optional<std::string> const v = readFile("/proc/driver/nvidia/version");
    std::smatch m;
    static std::regex const re("Kernel Module\\s+([0-9][0-9.]*)");
    if (v && std::regex_search(*v, m, re)) {
        return m[1].str();
    }
    return "unknown";
}

// "core,hardened": the levels QSA_LEVELS selected, as checks::parseSelection reads them back.
std::string selectedLevels(checks::Selection const& sel) {
    std::string l;
    for (std::string const& v : sel.levels) {
        l += (l.empty() ? "" : ",") + v;
    }
    return l;
}

// The GPUs to certify (--gpus; fakes in a CPU dry run) and the SASS check (contract: the certified code is the
// compiled SASS, not a JIT of the PTX). 0, or certify's exit code.
int selectGpus(Options const& o, std::string const& sass, std::vector<GpuInfo>& gpus) {
    std::vector<GpuInfo> all;
    if (o.cpuDryRun) {
        for (int i = 0; i < o.fakeGpus; ++i) {
            GpuInfo g;
            g.index = i;
            g.name = "CPU dry run (no GPU)";
            g.uuid = "FAKE-" + std::to_string(i);
            g.pciBusId = "none";
            g.major = o.fakeSm / 10;
            g.minor = o.fakeSm % 10;
            all.push_back(g);
        }
    } else {
        all = queryGpus();
    }
    for (GpuInfo g : all) {
        if (o.gpus.empty() || std::find(o.gpus.begin(), o.gpus.end(), g.index) != o.gpus.end()) {
            g.visibleId = childVisibleDevices(std::getenv("CUDA_VISIBLE_DEVICES"), g.index);
            gpus.push_back(g);
        }
    }
    if (gpus.empty()) {
        std::fprintf(stderr, "certify: no GPU to certify (%zu visible, --gpus selects none)\n", all.size());
        return 2;
    }
    bool refused = false;
    for (GpuInfo const& g : gpus) {
        SassDecision const d = sassFor(sass, g.major, g.minor);
        if (!d.carried) {
            std::fprintf(stderr, "certify: GPU %d (%s): %s.\n", g.index, g.name.c_str(), d.message.c_str());
            refused = true;
        }
    }
    if (refused && !o.allowPtxJit) {
        std::fprintf(stderr,
                     "certify: refusing to certify a build without SASS for the GPU: what runs would be the driver's "
                     "JIT of the PTX, not the compiled code. Rebuild with the GPU's architecture (e.g. "
                     "--config=all_archs) or pass --allow-ptx-jit to certify the JIT path (recorded in the "
                     "certificate).\n");
        return 3;
    }
    return 0;
}

// The plan: every property of every selected contract (listed by its binary on the first GPU), with its budget
// and seed. 0, or certify's exit code.
int planProperties(Options const& o, Layout const& layout, std::string const& visibleId, checks::Selection const& sel,
                   std::vector<ContractPlan>& plan) {
    if (o.properties) {
        for (ContractSpec const& c : contracts()) {
            if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.number) == o.only.end()) {
                continue;
            }
            ContractPlan cp{c, o.cpuDryRun ? "properties/" + c.test : c.gpuBinary, {}, {}};
            cp.exe = locate(layout, cp.rel);
            if (cp.exe.empty()) {
                std::fprintf(stderr, "certify: %s not found (runfiles %s, bundle %s, --bin-dir %s)\n", cp.rel.c_str(),
                             layout.runfilesRoot.c_str(), layout.bundleRoot.c_str(), o.binDir.c_str());
                return 2;
            }
            ChildSpec list;
            list.exe = cp.exe.string();
            list.args = {"--gtest_list_tests"};
            list.unset = kUnset;
            list.env = {{"CUDA_VISIBLE_DEVICES", visibleId}};
            runfilesEnv(layout, cp.exe, list);
            list.timeoutSeconds = 120;
            ChildResult const r = runChild(list, [](std::string const&) {});
            std::vector<std::string> const ids = parseGtestList(r.output);
            if (!r.ok() || ids.empty()) {
                std::fprintf(stderr, "certify: listing the properties of %s failed (%s):\n%s\n", cp.rel.c_str(),
                             r.describe().c_str(), r.output.c_str());
                return 2;
            }
            for (std::string const& id : ids) {
                auto const ov = o.cases.find(id);
                std::optional<int64_t> const cases =
                    ov != o.cases.end() ? std::optional<int64_t>(ov->second) : std::nullopt;
                checks::CheckInfo const info = checks::lookup(id);
                // An unregistered property fails in its child (properties/prop.cc): it is run, never skipped.
                bool const judged = !info.registered() || sel.judged(info);
                cp.properties.push_back({c.number, id, cases, propertySeed(o.seed, id), info, judged});
            }
            plan.push_back(cp);
        }
    }
    return 0;
}

// Whole binaries: the fixture replay through //api:impl; this project's stage properties and kernel stage tests
// when //api:impl is //kernels:qsa_kernels (they test its launchers, not the public API). Returns the line that
// names the stage tests run, or why none.
std::string planSuites(Options const& o, Layout const& layout, bool ownKernels, std::string const& implLabel,
                       std::vector<SuitePlan>& suites) {
    if (o.replayFixtures) {
        suites.push_back({"fixture replay",
                          o.cpuDryRun ? "fixtures/replay_test" : "fixtures/replay_gpu_test",
                          {},
                          {o.cpuDryRun ? "--impl=reference" : "--impl=gpu"}});
    }
    std::vector<std::string> stageNames;
    std::string stageLine;
    if (!o.stageTests) {
        stageLine = "This project's kernel stage tests: not run (--no-stage-tests).";
    } else if (!ownKernels) {
        stageLine = "This project's kernel stage tests: not run (//api:impl is " + implLabel +
                    "; they test //kernels:qsa_kernels' own launchers).";
    } else if (o.cpuDryRun) {
        stageLine = "This project's kernel stage tests: not run (CPU dry run: they need a GPU).";
    } else {
        for (ContractSpec const& c : stageProperties()) {
            suites.push_back({"stage properties", c.gpuBinary, {}, {}});
            stageNames.push_back(c.gpuBinary);
        }
        std::istringstream names(kKernelStageTests);
        for (std::string n; std::getline(names, n);) {
            if (!n.empty()) {
                suites.push_back({"kernel stage tests", "kernels/" + n, {}, {}});
                stageNames.push_back("kernels/" + n);
            }
        }
        stageLine = "Also ran this project's stage tests (//api:impl is //kernels:qsa_kernels):";
        for (std::string const& n : stageNames) {
            stageLine += " " + n;
        }
        stageLine += ".";
    }
    for (SuitePlan& s : suites) {
        s.exe = locate(layout, s.rel); // a missing binary is a FAIL of its suite, recorded below
    }
    return stageLine;
}

// One GPU's part of the certificate: the device, its SASS decision, every property, suite and exhaustive result.
json gpuCertificate(GpuRun& run, Options const& o, std::string const& sass, std::vector<ContractPlan> const& plan,
                    std::vector<SuitePlan> const& suites, bool exhaustiveJudged, std::string const& stageLine) {
    GpuInfo const& g = run.gpu;
    SassDecision const d = sassFor(sass, g.major, g.minor);
    json gj = {{"index", g.index},
               {"cuda_visible_devices", g.visibleId},
               {"name", g.name},
               {"uuid", g.uuid},
               {"pci_bus_id", g.pciBusId},
               {"sm", std::to_string(g.major) + std::to_string(g.minor)},
               {"compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor)},
               {"sm_count", g.smCount},
               {"memory_bytes", g.totalMemBytes},
               {"sass",
                {{"carried", d.carried},
                 {"exact", d.exact},
                 {"cubin_arch", d.cubinArch},
                 {"message", d.message},
                 {"ptx_jit_allowed", o.allowPtxJit}}}};
    if (o.properties) {
        json cs = json::array();
        for (ContractPlan const& c : plan) {
            json props = json::array();
            double secs = 0;
            for (PropertyPlan const& p : c.properties) {
                json const& r = run.properties[p.id];
                secs += r.value("seconds", 0.0);
                props.push_back(r);
            }
            cs.push_back({{"number", c.spec.number},
                          {"name", c.spec.name},
                          {"binary", c.rel},
                          {"properties", props},
                          {"seconds", secs}});
        }
        gj["contracts"] = cs;
    }
    if (o.exhaustive && exhaustiveJudged) {
        gj["exhaustive"] = run.exhaustive;
    } else if (o.exhaustive) {
        gj["exhaustive"] = {{"verdict", "NOT_JUDGED"}};
    }
    json coverage = json::array();
    for (auto const& [id, r] : run.properties) {
        for (auto const& l : r.value("coverage", json::array())) {
            coverage.push_back(l);
        }
    }
    json sj = json::array();
    for (SuitePlan const& s : suites) {
        json const& r = run.suites[s.rel];
        for (auto const& l : r.value("coverage", json::array())) {
            coverage.push_back(l);
        }
        sj.push_back(r);
    }
    gj["suites"] = sj;
    gj["coverage"] = coverage;
    gj["stage_tests_line"] = stageLine;
    return gj;
}

// A job not run (--time-limit reached): recorded as a failure (a certificate never passes on work it skipped).
struct Job {
    size_t gpu;
    ContractPlan const* contract;
    PropertyPlan const* property; // null (and suite null): the exhaustive checks
    SuitePlan const* suite = nullptr;
};

void recordNotRun(Job const& job, GpuRun& run) {
    json r = {{"verdict", "FAIL"}, {"error", "not run: --time-limit reached"}};
    if (job.property != nullptr) {
        PropertyPlan const& p = *job.property;
        r = {{"id", p.id},
             {"seed", p.seed},
             {"rc_params", rcParams(p.cases, p.seed)},
             {"cases_planned", p.cases ? json(*p.cases) : json()},
             {"cases_run", 0},
             {"verdict", "FAIL"},
             {"seconds", 0.0},
             {"exit", "not run"},
             {"failures", json::array({"not run: --time-limit reached"})},
             {"fixtures", json::array()}};
    }
    if (job.suite != nullptr) {
        run.suites[job.suite->rel] = {{"name", job.suite->name},
                                      {"binary", job.suite->rel},
                                      {"tests", json::array()},
                                      {"error", "not run: --time-limit reached"}};
    } else if (job.property == nullptr) {
        run.exhaustive = r;
    } else {
        run.properties[job.property->id] = r;
    }
}

int realMain(int argc, char** argv) {
    std::string const defaultOut =
        (fs::path(envOr("BUILD_WORKING_DIRECTORY", fs::current_path().string())) / "certificate").string();
    // --sanitizers=..., --no-sanitizers, --sanitize-jobs=N (tools/certify_sanitize.h), before the main parser.
    sanitize::Options const sanitizeOpts = sanitize::takeArgs(argc, argv);
    std::optional<Options> const parsed = parseArgs(argc, argv, defaultOut);
    if (!parsed) {
        return 0;
    }
    Options const o = *parsed;
    // What is judged (contract section 8): QSA_LEVELS / QSA_PROFILE, passed on to every child.
    checks::Selection const sel = checks::selectionFromEnv();
    std::string const implLabel = qsa::api::kImplLabel;
    bool const ownKernels =
        implLabel.size() >= 21 && implLabel.compare(implLabel.size() - 21, 21, "//kernels:qsa_kernels") == 0;
    Layout const layout = findLayout(argv[0], o.binDir);
    fs::path const outDir = fs::absolute(o.outDir);

    std::string const sass = compiledSassArchs();
    std::vector<GpuInfo> gpus;
    if (int const rc = selectGpus(o, sass, gpus)) {
        return rc;
    }

    std::vector<ContractPlan> plan;
    if (int const rc = planProperties(o, layout, gpus[0].visibleId, sel, plan)) {
        return rc;
    }
    std::vector<SuitePlan> suites;
    std::string const stageLine = planSuites(o, layout, ownKernels, implLabel, suites);
    unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
    int const jobsPerGpu =
        o.jobsPerGpu > 0 ? o.jobsPerGpu : std::clamp(static_cast<int>(cores / (4 * gpus.size())), 1, 4);
    int const exThreads =
        o.exhaustiveThreads > 0 ? o.exhaustiveThreads : std::max(1, static_cast<int>(cores / gpus.size()));
    if (o.list) {
        std::printf("implementation under test: %s; judged: %s; budget scale %g (QSA_BUDGET_SCALE)\n",
                    implLabel.c_str(), sel.describe().c_str(), budgetScale(o.scale));
        for (ContractPlan const& c : plan) {
            std::printf("contract %d (%s): %s\n", c.spec.number, c.spec.name.c_str(), c.exe.c_str());
            for (PropertyPlan const& p : c.properties) {
                std::printf("  %-52s %s RC_PARAMS=\"%s\"%s\n", p.id.c_str(), checks::tags(p.info).c_str(),
                            rcParams(p.cases, p.seed).c_str(), p.judged ? "" : " NOT JUDGED");
            }
        }
        for (SuitePlan const& s : suites) {
            std::printf("%s: %s\n", s.name.c_str(), s.exe.empty() ? ("MISSING " + s.rel).c_str() : s.exe.c_str());
        }
        std::printf("%s\n", stageLine.c_str());
        std::printf("exhaustive: %s\n", o.exhaustive ? locate(layout, "tools/exhaustive_primitives").c_str() : "off");
        std::printf("GPUs: %zu, %d jobs per GPU, %d exhaustive threads per GPU, out %s\n", gpus.size(), jobsPerGpu,
                    exThreads, outDir.c_str());
        return 0;
    }

    // Fresh output tree (only the parts certify owns).
    fs::create_directories(outDir);
    std::vector<GpuRun> runs(gpus.size());
    for (size_t i = 0; i < gpus.size(); ++i) {
        runs[i].gpu = gpus[i];
        runs[i].dir = outDir / ("gpu" + std::to_string(gpus[i].index));
        fs::remove_all(runs[i].dir);
        fs::create_directories(runs[i].dir / "logs");
    }

    Progress progress;
    std::string mode = o.progress;
    if (mode == "auto") {
        mode = isatty(STDOUT_FILENO) ? "bar" : "lines";
    }
    progress.mode = mode;
    progress.exhaustiveDone.assign(gpus.size(), 0.0);
    for (ContractPlan const& c : plan) {
        for (PropertyPlan const& p : c.properties) {
            progress.s.casesTotal += p.cases.value_or(0) * static_cast<int64_t>(gpus.size());
            progress.s.jobsTotal += p.judged ? static_cast<int>(gpus.size()) : 0;
        }
    }
    progress.s.jobsTotal += static_cast<int>(suites.size() * gpus.size());
    if (o.exhaustive) {
        progress.s.jobsTotal += static_cast<int>(gpus.size());
        progress.s.exhaustiveTotal =
            static_cast<double>(gpus.size()) * ((o.cpuDryRun ? 65536.0 : 4294967296.0) + 131072.0);
    }
    std::printf("certify: %zu GPU(s), %d contract(s), %d jobs per GPU, output %s\n", gpus.size(),
                static_cast<int>(plan.size()), jobsPerGpu, outDir.c_str());
    for (GpuInfo const& g : gpus) {
        std::printf("  gpu %d: %s, sm_%d%d, %s, CUDA_VISIBLE_DEVICES=%s\n", g.index, g.name.c_str(), g.major, g.minor,
                    g.uuid.c_str(), g.visibleId.c_str());
    }
    std::fflush(stdout);
    std::string const started = utcNow();

    // A queue of jobs per GPU, `jobsPerGpu` threads draining each: the exhaustive checks first, then properties.
    bool const exhaustiveJudged = sel.judged(checks::lookup("Exhaustive.Primitives"));
    std::vector<std::deque<Job>> queues(gpus.size());
    for (size_t i = 0; i < gpus.size(); ++i) {
        if (o.exhaustive && exhaustiveJudged) {
            queues[i].push_back({i, nullptr, nullptr});
        }
        for (ContractPlan const& c : plan) {
            for (PropertyPlan const& p : c.properties) {
                if (p.judged) {
                    queues[i].push_back({i, &c, &p});
                    continue;
                }
                // Not selected: never run, never a pass.
                std::printf("%s\n", checks::notJudgedLine(p.info, sel).c_str());
                runs[i].properties[p.id] = {{"id", p.id},
                                            {"seed", p.seed},
                                            {"level", p.info.level},
                                            {"profile", p.info.profile},
                                            {"rc_params", rcParams(p.cases, p.seed)},
                                            {"verdict", "NOT_JUDGED"},
                                            {"seconds", 0.0},
                                            {"failures", json::array()},
                                            {"fixtures", json::array()}};
            }
        }
        for (SuitePlan const& s : suites) {
            if (s.exe.empty()) {
                runs[i].suites[s.rel] = {{"name", s.name},
                                         {"binary", s.rel},
                                         {"tests", json::array()},
                                         {"error", s.rel + " not found (runfiles, bundle or --bin-dir)"}};
                continue;
            }
            queues[i].push_back({i, nullptr, nullptr, &s});
        }
    }
    std::mutex qm;
    std::mutex resultsMutex;
    std::atomic<bool> allDone{false};
    std::thread ticker([&] {
        while (!allDone.load()) {
            progress.tick();
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
    });
    std::vector<std::thread> workers;
    for (size_t i = 0; i < gpus.size(); ++i) {
        for (int w = 0; w < jobsPerGpu; ++w) {
            workers.emplace_back([&, i] {
                for (;;) {
                    Job job;
                    {
                        std::lock_guard<std::mutex> g(qm);
                        if (queues[i].empty()) {
                            return;
                        }
                        job = queues[i].front();
                        queues[i].pop_front();
                    }
                    bool const late = o.timeLimitMinutes > 0 && secondsSince(progress.start) > o.timeLimitMinutes * 60;
                    if (late) {
                        {
                            std::lock_guard<std::mutex> g(progress.m);
                            progress.s.jobsDone += 1;
                            progress.s.failures += 1;
                        }
                        std::lock_guard<std::mutex> g(resultsMutex);
                        recordNotRun(job, runs[i]);
                        continue;
                    }
                    if (job.suite != nullptr) {
                        json r = runSuite(layout, *job.suite, runs[i], o, sel, progress);
                        std::lock_guard<std::mutex> g(resultsMutex);
                        runs[i].suites[job.suite->rel] = r;
                    } else if (job.property == nullptr) {
                        json r = runExhaustive(layout, runs[i], o, exThreads, progress, i);
                        std::lock_guard<std::mutex> g(resultsMutex);
                        runs[i].exhaustive = r;
                    } else {
                        json r = runProperty(layout, *job.contract, *job.property, runs[i], o, progress);
                        std::lock_guard<std::mutex> g(resultsMutex);
                        runs[i].properties[job.property->id] = r;
                    }
                }
            });
        }
    }
    for (std::thread& t : workers) {
        t.join();
    }
    allDone = true;
    ticker.join();
    progress.finish();

    // The certificate.
    json cert;
    cert["format"] = "qsa-certificate/1";
    cert["dry_run"] = o.cpuDryRun;
    CommitSource const commit = chooseCommit(
        std::getenv("QSA_GIT_COMMIT") ? std::optional<std::string>(std::getenv("QSA_GIT_COMMIT")) : std::nullopt,
        layout.bundleRoot.empty() ? std::nullopt : readFile(layout.bundleRoot / "COMMIT"),
        std::getenv("BUILD_WORKSPACE_DIRECTORY")
            ? runCapture("git -C '" + std::string(std::getenv("BUILD_WORKSPACE_DIRECTORY")) +
                         "' rev-parse HEAD 2>/dev/null")
            : std::nullopt);
    cert["git"] = {{"commit", commit.commit}, {"source", commit.source}};
    // A mutation-testing run (issue 8: --//kernels:enable_mutants=true and QSA_MUTANT=n) certifies a mutant, not
    // the production kernels: say so.
    std::string const mutant = envOr("QSA_MUTANT", "0");
    if (mutant != "0") {
        cert["qsa_mutant"] = mutant;
    }
    cert["build"] = {{"sass_archs", splitArchList(sass)},
                     {"ptx_archs", splitArchList(compiledPtxArchs())},
                     {"cuda_toolkit_compiled", compiledCudartVersion()}};
    cert["cuda"] = {{"runtime_version", o.cpuDryRun ? 0 : runtimeVersion()},
                    {"driver_api_version", o.cpuDryRun ? 0 : driverApiVersion()},
                    {"driver_release", driverRelease()}};
    json contractsSel = json::array();
    for (ContractPlan const& c : plan) {
        contractsSel.push_back(c.spec.number);
    }
    cert["budget"] = {{"scale", o.scale},
                      {"base_seed", o.seed},
                      {"properties", o.properties},
                      {"exhaustive", o.exhaustive},
                      {"contracts", contractsSel},
                      {"jobs_per_gpu", jobsPerGpu},
                      {"time_limit_minutes", o.timeLimitMinutes},
                      {"budget_scale", budgetScale(o.scale)},
                      {"levels", selectedLevels(sel)},
                      {"profile", sel.profile},
                      {"impl", implLabel}};
    cert["gpus"] = json::array();
    for (GpuRun& run : runs) {
        cert["gpus"].push_back(gpuCertificate(run, o, sass, plan, suites, exhaustiveJudged, stageLine));
    }
    cert["times"] = {{"started_utc", started}, {"total_seconds", secondsSince(progress.start)}};
    computeVerdicts(cert);
    // compute-sanitizer part (tools/certify_sanitize.h): after the properties, so the GPU is free for it.
    cert["sanitizers"] =
        o.cpuDryRun ? sanitize::notRun("CPU dry run")
                    : sanitize::run(sanitizeOpts, layout.bundleRoot.string(), (outDir / "sanitizer_logs").string());
    sanitize::applyVerdict(cert);
    {
        std::ofstream(outDir / "certificate.json") << renderJson(cert);
        std::ofstream(outDir / "certificate.md") << renderMarkdown(cert) << sanitize::markdown(cert);
    }
    std::string const verdict = cert["verdict"];
    std::string const vline = cert["verdict_line"];
    std::printf("certify: %s\n", stageLine.c_str());
    std::printf("certify: verdict %s%s; %s (judged %s, impl %s)\n  %s\n  %s\n", verdict.c_str(),
                o.cpuDryRun ? " (CPU DRY RUN, not a certificate)" : "", vline.c_str(), sel.describe().c_str(),
                implLabel.c_str(), (outDir / "certificate.json").c_str(), (outDir / "certificate.md").c_str());
    return verdict == "PASS" ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return realMain(argc, argv);
    } catch (std::exception const& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}

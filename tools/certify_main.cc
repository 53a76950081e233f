// certify (issue 7): one command that certifies every visible GPU against the contract and writes a certificate.
//   bazel run //tools:certify -- [--scale F] [--out DIR] [--allow-ptx-jit] ...     (--help lists everything)
// For each GPU a worker pool runs, pinned with CUDA_VISIBLE_DEVICES, the exhaustive scalar checks and every
// property of every contract (one child process per property, RC_PARAMS="max_success=N seed=S" with fixed
// seeds), then certificate.json / certificate.md are written. Exit 0 PASS, 1 FAIL, 2 setup error, 3 refused (no
// SASS for a GPU).
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

#include "tools/certify_child.h"
#include "tools/certify_core.h"
#include "tools/certify_cuda.h"
#include "tools/certify_sanitize.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace qsa::certify;

namespace {

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
    std::optional<int64_t> cases;
    uint64_t seed;
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
};

json runProperty(Layout const& l, ContractPlan const& c, PropertyPlan const& p, GpuRun& run, Options const& o,
                 Progress& progress) {
    fs::path const outputs = run.dir / "outputs" / safeName(p.id);
    fs::path const tmp = run.dir / "tmp" / safeName(p.id);
    fs::path const log = run.dir / "logs" / (safeName(p.id) + ".log");
    fs::path const gtestJson = run.dir / "logs" / (safeName(p.id) + ".json");
    fs::create_directories(outputs);
    fs::create_directories(tmp);
    std::string const rc = rcParams(p.cases, p.seed);
    ChildSpec spec;
    spec.exe = c.exe.string();
    spec.args = {"--gtest_filter=" + p.id, "--gtest_output=json:" + gtestJson.string(), "--gtest_color=no"};
    spec.unset = kUnset;
    spec.env = {{"CUDA_VISIBLE_DEVICES", run.gpu.visibleId},
                {"RC_PARAMS", rc},
                {"TEST_UNDECLARED_OUTPUTS_DIR", outputs.string()},
                {"TEST_TMPDIR", tmp.string()},
                {"TMPDIR", tmp.string()}};
    runfilesEnv(l, c.exe, spec);
    spec.logPath = log.string();
    spec.timeoutSeconds = o.childTimeout;
    auto const t0 = Clock::now();
    ChildResult const r = runChild(spec, [](std::string const&) {});
    double const secs = secondsSince(t0);
    std::error_code ec;
    fs::remove_all(tmp, ec);

    json res = {{"id", p.id},           {"seed", p.seed},
                {"rc_params", rc},      {"cases_planned", p.cases ? json(*p.cases) : json()},
                {"seconds", secs},      {"log", log.string()},
                {"exit", r.describe()}, {"fixtures", capturedFixtures(outputs)}};
    GtestOutcome const g = parseGtestJson(readFile(gtestJson).value_or(""), p.id);
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
    // Cases run: the budget when it passed, RapidCheck's "Falsifiable after N tests" when it failed.
    json ran = p.cases ? json(*p.cases) : json();
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
    char line[512];
    std::snprintf(line, sizeof(line), "[gpu %d] %s %-52s %6s cases %7.1f s%s", run.gpu.index, pass ? "PASS" : "FAIL",
                  p.id.c_str(), p.cases ? std::to_string(*p.cases).c_str() : "dflt", secs,
                  pass ? "" : ("  (" + r.describe() + ", log " + log.string() + ")").c_str());
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
    Layout const layout = findLayout(argv[0], o.binDir);
    fs::path const outDir = fs::absolute(o.outDir);

    // GPUs and the SASS check (contract: the certified code is the compiled SASS, not a JIT of the PTX).
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
    std::vector<GpuInfo> gpus;
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
    std::string const sass = compiledSassArchs();
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

    // The plan: every property of every selected contract, with its budget and seed.
    std::vector<ContractPlan> plan;
    if (o.properties) {
        for (ContractSpec const& c : contracts()) {
            if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.number) == o.only.end()) {
                continue;
            }
            ContractPlan cp{c, "properties/" + c.test + (o.cpuDryRun ? "" : "_gpu"), {}, {}};
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
            list.env = {{"CUDA_VISIBLE_DEVICES", gpus[0].visibleId}};
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
                    ov != o.cases.end() ? std::optional<int64_t>(ov->second) : budgetCases(id, o.scale);
                if (!cases) {
                    std::fprintf(stderr,
                                 "certify: warning: %s is not in certify's budget table; it runs its "
                                 "pre-merge default (tools/certify_core.cc budgetCases)\n",
                                 id.c_str());
                }
                cp.properties.push_back({c.number, id, cases, propertySeed(o.seed, id)});
            }
            plan.push_back(cp);
        }
    }
    unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
    int const jobsPerGpu =
        o.jobsPerGpu > 0 ? o.jobsPerGpu : std::clamp(static_cast<int>(cores / (4 * gpus.size())), 1, 4);
    int const exThreads =
        o.exhaustiveThreads > 0 ? o.exhaustiveThreads : std::max(1, static_cast<int>(cores / gpus.size()));
    if (o.list) {
        for (ContractPlan const& c : plan) {
            std::printf("contract %d (%s): %s\n", c.spec.number, c.spec.name.c_str(), c.exe.c_str());
            for (PropertyPlan const& p : c.properties) {
                std::printf("  %-52s RC_PARAMS=\"%s\"\n", p.id.c_str(), rcParams(p.cases, p.seed).c_str());
            }
        }
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
            progress.s.jobsTotal += static_cast<int>(gpus.size());
        }
    }
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
    struct Job {
        size_t gpu;
        ContractPlan const* contract;
        PropertyPlan const* property; // null: the exhaustive checks
    };
    std::vector<std::deque<Job>> queues(gpus.size());
    for (size_t i = 0; i < gpus.size(); ++i) {
        if (o.exhaustive) {
            queues[i].push_back({i, nullptr, nullptr});
        }
        for (ContractPlan const& c : plan) {
            for (PropertyPlan const& p : c.properties) {
                queues[i].push_back({i, &c, &p});
            }
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
                        // Not run: recorded as a failure (a certificate never passes on work it skipped).
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
                        {
                            std::lock_guard<std::mutex> g(progress.m);
                            progress.s.jobsDone += 1;
                            progress.s.failures += 1;
                        }
                        std::lock_guard<std::mutex> g(resultsMutex);
                        if (job.property == nullptr) {
                            runs[i].exhaustive = r;
                        } else {
                            runs[i].properties[job.property->id] = r;
                        }
                        continue;
                    }
                    if (job.property == nullptr) {
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
                      {"time_limit_minutes", o.timeLimitMinutes}};
    cert["gpus"] = json::array();
    for (GpuRun& run : runs) {
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
        if (o.exhaustive) {
            gj["exhaustive"] = run.exhaustive;
        }
        cert["gpus"].push_back(gj);
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
    std::printf("certify: verdict %s%s\n  %s\n  %s\n", verdict.c_str(),
                o.cpuDryRun ? " (CPU DRY RUN, not a certificate)" : "", (outDir / "certificate.json").c_str(),
                (outDir / "certificate.md").c_str());
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

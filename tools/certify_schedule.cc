// certify's schedule (certify_plan.h): the progress display, the output tree, the jobs (one gtest child with its
// files under the GPU's run directory, and what a property, a whole binary and the exhaustive checks make of their
// child's exit, output and JSON), the job queues and their worker threads, and the jobs --time-limit leaves unrun.
#include "tools/certify_plan.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <deque>
#include <thread>

namespace qsa {
namespace certify {

namespace fs = std::filesystem;
using nlohmann::json;

double secondsSince(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// ---- shared progress state -------------------------------------------------------------------------------

void Progress::jobDone(bool failed, int64_t cases) {
    std::lock_guard<std::mutex> g(m);
    s.casesDone += cases;
    s.jobsDone += 1;
    s.failures += failed ? 1 : 0;
}

void Progress::event(std::string const& line) {
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

void Progress::drawLocked() {
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

void Progress::tick() {
    std::lock_guard<std::mutex> g(m);
    if (mode == "bar") {
        drawLocked();
    } else if (mode == "lines" && Clock::now() - lastLine > std::chrono::seconds(30)) {
        lastLine = Clock::now();
        drawLocked();
    }
}

void Progress::finish() {
    std::lock_guard<std::mutex> g(m);
    if (mode != "none") {
        if (mode == "bar") {
            drawLocked();
        }
        std::printf("\n");
        std::fflush(stdout);
    }
}

void startProgress(Progress& progress, Options const& o, Plan const& plan) {
    std::string mode = o.progress;
    if (mode == "auto") {
        mode = isatty(STDOUT_FILENO) ? "bar" : "lines";
    }
    progress.mode = mode;
    progress.exhaustiveDone.assign(plan.gpus.size(), 0.0);
    for (ContractPlan const& c : plan.contracts) {
        for (PropertyPlan const& p : c.properties) {
            progress.s.casesTotal += p.cases.value_or(0) * static_cast<int64_t>(plan.gpus.size());
            progress.s.jobsTotal += p.judged ? static_cast<int>(plan.gpus.size()) : 0;
        }
    }
    progress.s.jobsTotal += static_cast<int>(plan.suites.size() * plan.gpus.size());
    if (o.exhaustive) {
        progress.s.jobsTotal += static_cast<int>(plan.gpus.size());
        progress.s.exhaustiveTotal =
            static_cast<double>(plan.gpus.size()) * ((o.cpuDryRun ? 65536.0 : 4294967296.0) + 131072.0);
    }
}

// ---- results -------------------------------------------------------------------------------------------------

std::vector<GpuRun> prepareRuns(Plan const& plan) {
    fs::create_directories(plan.outDir);
    std::vector<GpuRun> runs(plan.gpus.size());
    for (size_t i = 0; i < plan.gpus.size(); ++i) {
        runs[i].gpu = plan.gpus[i];
        runs[i].dir = plan.outDir / ("gpu" + std::to_string(plan.gpus[i].index));
        fs::remove_all(runs[i].dir);
        fs::create_directories(runs[i].dir / "logs");
    }
    return runs;
}

namespace {

// A property's result without its child: id, seed, level, profile, RC_PARAMS, `verdict`, no failure.
json propertyStub(PropertyPlan const& p, char const* verdict) {
    // An unregistered property (its child fails it) is recorded at level "unregistered", as computeVerdicts
    // records one without a level.
    return {{"id", p.id},
            {"seed", p.seed},
            {"level", p.info.registered() ? p.info.level : "unregistered"},
            {"profile", p.info.registered() ? p.info.profile : "unregistered"},
            {"rc_params", rcParams(p.cases, p.seed)},
            {"verdict", verdict},
            {"seconds", 0.0},
            {"failures", json::array()},
            {"fixtures", json::array()}};
}

// A property id or binary path as a file name: [A-Za-z0-9._-] kept, everything else '_'.
std::string safeName(std::string s) {
    for (char& c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
            c = '_';
        }
    }
    return s;
}

// The fixtures a child captured (TEST_UNDECLARED_OUTPUTS_DIR/captured/<case>/), sorted.
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

// The files of one gtest child under its GPU's run directory.
struct ChildFiles {
    fs::path outputs, log, gtestJson;
};

// Runs a gtest binary (workspace-relative `rel`) as one child on the run's GPU: CUDA_VISIBLE_DEVICES, RC_PARAMS =
// rc, the budget scale; the engine gives it its runfiles, a fresh temp directory and the undeclared-outputs
// directory beside its log (logs/<tag>.outputs); its log and gtest JSON under `tag`. Returns its result; `secs`
// gets its wall time.
ChildResult runGtestChild(Layout const& l, GpuRun const& run, Options const& o, std::string const& tag,
                          fs::path const& exe, std::string const& rel, std::vector<std::string> args,
                          std::string const& rc, ChildFiles& f, double& secs) {
    f = {run.dir / "logs" / (tag + ".outputs"), run.dir / "logs" / (tag + ".log"), run.dir / "logs" / (tag + ".json")};
    args.push_back("--gtest_output=json:" + f.gtestJson.string());
    args.push_back("--gtest_color=no");
    ChildSpec spec = launchSpec(l, exe, rel, run.gpu.visibleId, std::move(args), o.childTimeout);
    spec.env.insert({{"RC_PARAMS", rc}, {"QSA_BUDGET_SCALE", std::to_string(budgetScale(o.scale))}});
    spec.logPath = f.log.string();
    auto const t0 = Clock::now();
    ChildResult r = runChild(spec, [](std::string const&) {});
    secs = secondsSince(t0);
    return r;
}

// What every gtest child's result records: its time, log, exit, QSA_COVERAGE and QSA_FAST lines (profile fast:
// what it judged, section 9.2) and the fixtures it captured.
json childFields(ChildResult const& r, ChildFiles const& f, double secs) {
    return {{"seconds", secs},
            {"log", f.log.string()},
            {"exit", r.describe()},
            {"coverage", linesStartingWith(r.output, "QSA_COVERAGE ")},
            {"fast", linesStartingWith(r.output, "QSA_FAST ")},
            {"fixtures", capturedFixtures(f.outputs)}};
}

// Failure messages as recorded: each cut at 4000 characters.
json truncated(std::vector<std::string> const& failures) {
    json out = json::array();
    for (std::string const& f : failures) {
        out.push_back(f.substr(0, 4000));
    }
    return out;
}

// "child <how it ended>...; output tail:\n<the last 2000 characters of its output>".
std::string childError(ChildResult const& r, std::string const& what) {
    std::string const tail = r.output.size() > 2000 ? r.output.substr(r.output.size() - 2000) : r.output;
    return "child " + r.describe() + what + "; output tail:\n" + tail;
}

// ---- jobs: each runs one child pinned to its GPU through tools/engine.sh (certify_plan.h), with
// the environment of a `bazel test` run of its own (runfiles, undeclared-outputs and temp directories, gtest JSON
// output, RC_PARAMS with the property's fixed seed, QSA_BUDGET_SCALE) and turns what it left into one JSON leaf of
// the certificate and one event line.

// One property of a contract binary: --gtest_filter=<id>, its RC_PARAMS; PASS only when the child exited 0 and
// its gtest JSON has the property passed.
json runProperty(Layout const& l, ContractPlan const& c, PropertyPlan const& p, GpuRun& run, Options const& o,
                 Progress& progress) {
    std::string const rc = rcParams(p.cases, p.seed);
    ChildFiles f;
    double secs = 0;
    ChildResult const r =
        runGtestChild(l, run, o, safeName(p.id), c.exe, c.rel, {"--gtest_filter=" + p.id}, rc, f, secs);

    std::vector<GtestTest> const tests = parseGtestJsonAll(readFile(f.gtestJson).value_or(""));
    auto const t = std::find_if(tests.begin(), tests.end(), [&](GtestTest const& x) { return x.id == p.id; });
    bool const found = t != tests.end();
    std::vector<std::string> const failures = found ? t->failures : std::vector<std::string>{};
    bool const pass = r.ok() && found && t->status == "PASS";
    json res = propertyStub(p, pass ? "PASS" : "FAIL");
    res.update(childFields(r, f, secs));
    res.update({{"budget_scale", budgetScale(o.scale)},
                {"cases_planned", p.cases ? json(*p.cases) : json()},
                {"failures", truncated(failures)}});
    if (!pass && failures.empty()) {
        res["failures"].push_back((found ? "" : "property did not run; ") + childError(r, ""));
    }
    // Cases run: the child's QSA_SEED line when it passed, RapidCheck's "Falsifiable after N tests" when it failed.
    std::optional<int64_t> const seedCases = parseSeedLineCases(r.output, p.id);
    json ran = seedCases ? json(*seedCases) : p.cases ? json(*p.cases) : json();
    if (!pass) {
        ran = json();
        for (std::string const& f : failures) {
            if (auto n = parseFalsifiableAfter(f)) {
                ran = *n;
            }
        }
    }
    res["cases_run"] = ran;
    progress.jobDone(!pass, p.cases.value_or(0));
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
    ChildResult const r = runGtestChild(l, run, o, safeName(s.rel), s.exe, s.rel, s.args,
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
        tests.push_back({{"id", t.id},
                         {"level", info.registered() ? info.level : "per check"},
                         {"profile", info.registered() ? info.profile : "per check"},
                         {"verdict", verdict},
                         {"failed_checks", fc},
                         {"failures", truncated(t.failures)}});
    }
    json res = childFields(r, f, secs);
    res.update({{"name", s.name},
                {"binary", s.rel},
                {"tests", tests},
                {"not_judged_lines", linesStartingWith(r.output, "QSA_NOT_JUDGED ")}});
    if (tests.empty() || (!r.ok() && failed == 0)) {
        res["error"] = childError(r, tests.empty() ? ", no test results" : "");
    }
    progress.jobDone(failed > 0 || res.contains("error"));
    char line[512];
    std::snprintf(line, sizeof(line), "[gpu %d] %s %-52s %4zu tests %7.1f s%s", run.gpu.index,
                  failed == 0 && !res.contains("error") ? "PASS" : "FAIL", (s.name + " " + s.rel).c_str(), tests.size(),
                  secs,
                  failed ? ("  (" + std::to_string(failed) + " failed, log " + f.log.string() + ")").c_str() : "");
    progress.event(line);
    return res;
}

// tools/exhaustive_primitives with `threads` CPU threads (--simulate in a CPU dry run); its progress lines feed
// progress.exhaustiveDone[slot]. FAIL on any mismatch, a child error, or a result from another GPU.
json runExhaustive(Layout const& l, GpuRun& run, Options const& o, int threads, Progress& progress, size_t slot) {
    fs::path const exe = locate(l, "tools/exhaustive_primitives");
    fs::path const log = run.dir / "logs" / "exhaustive_primitives.log";
    fs::path const out = run.dir / "exhaustive.json";
    auto const t0 = Clock::now();
    // An object from the start: a child that left no result file gets its error from res.value("error", ""),
    // which throws on a null json (and, in a worker thread, aborted certify without a certificate).
    json res = json::object();
    if (exe.empty()) {
        res = {{"error", "tools/exhaustive_primitives not found (runfiles, bundle or --bin-dir)"}};
    } else {
        std::vector<std::string> args = {"--threads=" + std::to_string(threads), "--json=" + out.string()};
        if (o.cpuDryRun) {
            args.push_back("--simulate");
            args.push_back("--stride-log2=16");
        }
        ChildSpec spec = launchSpec(l, exe, "tools/exhaustive_primitives", run.gpu.visibleId, args, o.childTimeout);
        spec.logPath = log.string();
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
    progress.jobDone(bad);
    char line[512];
    std::snprintf(line, sizeof(line), "[gpu %d] %s exhaustive scalar checks %7.1f s%s", run.gpu.index,
                  bad ? "FAIL" : "PASS", res["seconds"].get<double>(),
                  bad ? ("  (log " + log.string() + ")").c_str() : "");
    progress.event(line);
    return res;
}

// One child to run on one GPU: a property, a whole binary (suite) or the exhaustive checks.
struct Job {
    size_t gpu;
    ContractPlan const* contract;
    PropertyPlan const* property; // null (and suite null): the exhaustive checks
    SuitePlan const* suite = nullptr;
};

// A suite's result without its child: `error` says why.
json suiteStub(SuitePlan const& s, std::string const& error) {
    return {{"name", s.name}, {"binary", s.rel}, {"tests", json::array()}, {"error", error}};
}

// Where a job's result goes in its GPU's results.
json& resultOf(Job const& job, GpuRun& run) {
    return job.suite != nullptr      ? run.suites[job.suite->rel]
           : job.property != nullptr ? run.properties[job.property->id]
                                     : run.exhaustive;
}

// A job not run (--time-limit reached): recorded as a failure (a certificate never passes on work it skipped).
json notRunResult(Job const& job) {
    std::string const why = "not run: --time-limit reached";
    if (job.suite != nullptr) {
        return suiteStub(*job.suite, why);
    }
    if (job.property == nullptr) {
        return {{"verdict", "FAIL"}, {"error", why}};
    }
    PropertyPlan const& p = *job.property;
    json r = propertyStub(p, "FAIL");
    r.update({{"cases_planned", p.cases ? json(*p.cases) : json()},
              {"cases_run", 0},
              {"exit", "not run"},
              {"failures", json::array({why})}});
    return r;
}

} // namespace

void runJobs(Options const& o, Plan const& plan, std::vector<GpuRun>& runs, Progress& progress) {
    // A queue of jobs per GPU, `jobsPerGpu` threads draining each: the exhaustive checks first, then properties.
    std::vector<std::deque<Job>> queues(plan.gpus.size());
    for (size_t i = 0; i < plan.gpus.size(); ++i) {
        if (o.exhaustive && plan.exhaustiveJudged) {
            queues[i].push_back({i, nullptr, nullptr});
        }
        for (ContractPlan const& c : plan.contracts) {
            for (PropertyPlan const& p : c.properties) {
                if (p.judged) {
                    queues[i].push_back({i, &c, &p});
                    continue;
                }
                // Not selected: never run, never a pass.
                std::printf("%s\n", checks::notJudgedLine(p.info, plan.sel).c_str());
                runs[i].properties[p.id] = propertyStub(p, "NOT_JUDGED");
            }
        }
        for (SuitePlan const& s : plan.suites) {
            if (s.exe.empty()) {
                runs[i].suites[s.rel] = suiteStub(s, s.rel + " not found (runfiles, bundle or --bin-dir)");
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
    for (size_t i = 0; i < plan.gpus.size(); ++i) {
        for (int w = 0; w < plan.jobsPerGpu; ++w) {
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
                    json r;
                    if (o.timeLimitMinutes > 0 && secondsSince(progress.start) > o.timeLimitMinutes * 60) {
                        progress.jobDone(true);
                        r = notRunResult(job);
                    } else if (job.suite != nullptr) {
                        r = runSuite(plan.layout, *job.suite, runs[i], o, plan.sel, progress);
                    } else if (job.property == nullptr) {
                        r = runExhaustive(plan.layout, runs[i], o, plan.exThreads, progress, i);
                    } else {
                        r = runProperty(plan.layout, *job.contract, *job.property, runs[i], o, progress);
                    }
                    std::lock_guard<std::mutex> g(resultsMutex);
                    resultOf(job, runs[i]) = std::move(r);
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
}

} // namespace certify
} // namespace qsa

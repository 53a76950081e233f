// certify's jobs (certify_schedule.h): one gtest child with its files under the GPU's run directory, and what a
// property, a whole binary and the exhaustive checks make of their child's exit, output and JSON.
#include "tools/certify_schedule.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace qsa {
namespace certify {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

} // namespace

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

} // namespace certify
} // namespace qsa

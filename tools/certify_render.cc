// Verdicts and rendering of the certificate (see certify_core.h). The certificate is plain JSON built by
// certify_report.cc; every key named "seconds" or under "times" is a time, everything else is a deterministic
// function of the build, the machine and the options.
#include "tools/certify_core.h"

#include "checks/levels.h"

#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace qsa {
namespace certify {

namespace {

using nlohmann::json;

char const* verdictOf(bool ok) {
    return ok ? "PASS" : "FAIL";
}

bool isPass(json const& node) {
    return node.is_object() && node.value("verdict", "") == "PASS";
}

// The five exhaustive checks every GPU must run (exhaustive_primitives' JSON keys).
std::vector<std::string> const& exhaustiveChecks() {
    static std::vector<std::string> const names = {"bf16_to_float", "float_to_bf16", "float_to_half", "half_to_float",
                                                   "rsqrt_rn"};
    return names;
}

void verdictOfExhaustive(json& ex) {
    bool ok = ex.is_object() && ex.value("error", "").empty() && ex.contains("checks");
    if (ok) {
        for (std::string const& name : exhaustiveChecks()) {
            json const& c = ex["checks"].value(name, json());
            ok = ok && c.is_object() && c.value("mismatches", int64_t(-1)) == 0 && c.value("inputs", int64_t(0)) > 0 &&
                 c.value("inputs", int64_t(0)) == c.value("expected_inputs", int64_t(-1));
        }
    }
    ex["verdict"] = verdictOf(ok);
}

std::string cudaVersion(json const& v) {
    if (!v.is_number_integer()) {
        return "unknown";
    }
    int const n = v.get<int>();
    return std::to_string(n / 1000) + "." + std::to_string((n % 1000) / 10);
}

std::string joinArchs(json const& list, char const* prefix) {
    std::string s;
    for (auto const& a : list) {
        s += (s.empty() ? "" : ", ") + std::string(prefix) + a.get<std::string>();
    }
    return s.empty() ? "none" : s;
}

std::string seconds(json const& node) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", node.value("seconds", 0.0));
    return buf;
}

std::string casesText(json const& v) {
    return v.is_number_integer() ? std::to_string(v.get<int64_t>()) : "default";
}

// The first informative line of a failure message: gtest's "file:line" and "Failed" lines are skipped.
std::string firstLine(std::string const& s) {
    // Also prop.cc's header lines (QSA_CHECK_FAILED, "Suite.Name [level=...]: what", QSA_SEED): level and
    // profile are in the certificate's own columns.
    static std::regex const noise("^(\\S+:[0-9]+:?|Failed|QSA_CHECK_FAILED .*|QSA_SEED .*|\\S+ \\[level=.*|)$");
    std::istringstream in(s);
    std::string line;
    while (std::getline(in, line) && std::regex_match(line, noise)) {
    }
    if (line.empty()) {
        line = s.substr(0, s.find('\n'));
    }
    return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

char const* const kLevels[] = {"core", "hardened"};
char const* const kProfiles[] = {"none", "ieee", "fast"};

// One level and profile of contract section 8: its checks judged (each property, registered test and exhaustive
// run counted once per GPU), passed, failed (named in `failing`) and not judged (named in `notJudged`).
struct Cell {
    int64_t judged = 0, passed = 0, failed = 0;
    std::set<std::string> failing, notJudged;
};

// Profile fast (contract section 9.2): the sums of the QSA_FAST lines of one level's judged fast checks.
struct FastSums {
    int64_t lines = 0, judgedElements = 0, unjudgedElements = 0, judgedRows = 0, ambiguousRows = 0;
    std::set<std::string> epsR;
};

struct Tally {
    checks::Selection sel;
    std::map<std::string, std::map<std::string, Cell>> cells; // level -> profile -> cell
    std::map<std::string, FastSums> fast;                     // level -> its fast checks' QSA_FAST lines
    // The fixture replay's tests (one per fixture, several checks each): a failed one counts the checks it names in
    // their own cells; one that passed names none of its checks, so it is counted here only.
    int64_t replayTests = 0, replayPassed = 0, replayNotJudged = 0;

    // One check, once. A result that belongs to no registered level and profile (an unregistered property, a
    // suite that did not run, a replay test that names no check) is counted in the first selected level,
    // profile none.
    void record(std::string level, std::string profile, std::string const& verdict, std::string const& what) {
        if (level != "core" && level != "hardened") {
            level = sel.levels.count("core") != 0 || sel.levels.count("hardened") == 0 ? "core" : "hardened";
            profile = "none";
        }
        if (profile != "ieee" && profile != "fast")
            profile = "none";
        Cell& c = cells[level][profile];
        if (verdict == "NOT_JUDGED") {
            c.notJudged.insert(what);
            return;
        }
        c.judged += 1;
        if (verdict == "PASS") {
            c.passed += 1;
        } else {
            c.failed += 1;
            c.failing.insert(what);
        }
    }
    void record(checks::CheckInfo const& c, std::string const& verdict, std::string const& what) {
        record(c.level, c.profile, verdict, what);
    }
};

// A judged check of profile fast: its QSA_FAST line(s) among `lines` (the child's, by id) are summed under its
// level. One that passed without any, or printed a malformed one, FAILS (section 9.2: a fast check reports what it
// judged, so it never passes vacuously); the returned reason names it in its level's failing list.
std::string countFast(json& p, json const& lines, FastSums& sums, std::string const& where) {
    std::string const check = p.value("id", "?");
    bool any = false;
    std::string why;
    for (auto const& l : lines) {
        std::string const text = l.is_string() ? l.get<std::string>() : "";
        std::optional<FastJudged> const f = parseFastLine(text);
        if (!f) {
            if (text.rfind("QSA_FAST " + check + " ", 0) == 0) {
                why = check + " printed a malformed QSA_FAST line (" + where + ")";
                p["verdict"] = "FAIL";
                p["failures"].push_back("malformed QSA_FAST line: " + text);
            }
            continue;
        }
        if (f->id != check)
            continue;
        any = true;
        sums.lines += 1;
        sums.judgedElements += f->judgedElements;
        sums.unjudgedElements += f->unjudgedElements;
        sums.judgedRows += f->judgedRows;
        sums.ambiguousRows += f->ambiguousRows;
        sums.epsR.insert(f->epsR);
    }
    if (!any && p.value("verdict", "") == "PASS") {
        why = check + " passed without a QSA_FAST line (" + where + ")";
        p["verdict"] = "FAIL";
        p["failures"].push_back("passed without a QSA_FAST line: a profile-fast check must report what it judged "
                                "(contract section 9.2)");
    }
    return why;
}

// "436.2M elements judged at eps_r 2^-21"
std::string fastElements(FastSums const& f) {
    std::string const eps = join(f.epsR, ", ");
    return shortCount(f.judgedElements) + " elements judged at eps_r " +
           (f.epsR.size() > 1 ? "mixed (" + eps + ")" : eps);
}

// A property or gtest result: level / profile from the registry when absent; a judged fast check's QSA_FAST lines
// (`fastLines`) summed; then counted once, in its level and profile. The fixture replay's tests (level "per
// check") count the checks they name.
void classify(json& p, json const& fastLines, Tally& t, std::string const& where) {
    checks::CheckInfo const info = checks::lookup(p.value("id", ""));
    if (!p.contains("level")) {
        p["level"] = info.registered() ? info.level : "unregistered";
        p["profile"] = info.registered() ? info.profile : "unregistered";
    }
    std::string const level = p["level"].get<std::string>();
    std::string const profile = p["profile"].get<std::string>();
    std::string const id = p.value("id", "?") + " (" + where + ")";
    std::string why;
    if (profile == "fast" && p.value("verdict", "FAIL") != "NOT_JUDGED")
        why = countFast(p, fastLines, t.fast[level], where);
    std::string const verdict = p.value("verdict", "FAIL");
    if (level != "per check") {
        t.record(level, profile, verdict, why.empty() ? id : why);
        return;
    }
    t.replayTests += 1;
    t.replayPassed += verdict == "PASS";
    t.replayNotJudged += verdict == "NOT_JUDGED";
    if (verdict == "PASS" || verdict == "NOT_JUDGED")
        return;
    bool named = false;
    for (auto const& f : p.value("failed_checks", json::array())) {
        t.record(f.value("level", ""), f.value("profile", ""), "FAIL", f.value("id", "?") + " in " + id);
        named = true;
    }
    if (!named)
        t.record("", "", "FAIL", id);
}

// One level's verdict, its line of the summary and its reason when it is not certified.
struct LevelVerdict {
    std::string verdict, line, why;
};

// e.g. "core: PASS (profile none 40/40, fast 8/8 checks, 436.2M elements judged at eps_r 2^-21; ieee not judged)",
// "hardened: FAIL (14 checks: 10 profile none, 4 fast; ieee not judged)", "hardened: NOT JUDGED (QSA_LEVELS=core)".
LevelVerdict levelVerdict(std::string const& level, Tally& t, std::string const& levelsAsked, json& out) {
    bool const selected = t.sel.levels.count(level) != 0;
    std::map<std::string, Cell>& cells = t.cells[level];
    FastSums const& fast = t.fast[level];
    int64_t judged = 0, passed = 0, failed = 0;
    std::string passes, fails, notJudged, noneRun;
    json profiles = json::object();
    std::vector<std::string> failing, notJudgedAll;
    for (char const* p : kProfiles) {
        Cell const& c = cells[p];
        bool const profileSelected = std::string(p) == "none" || t.sel.profile == p;
        judged += c.judged;
        passed += c.passed;
        failed += c.failed;
        if (c.judged > 0)
            passes += (passes.empty() ? "profile " : ", ") + std::string(p) + " " + std::to_string(c.passed) + "/" +
                      std::to_string(c.judged);
        if (c.failed > 0)
            fails += (fails.empty() ? "" : ", ") + std::to_string(c.failed) + (fails.empty() ? " profile " : " ") + p;
        if (!profileSelected)
            notJudged += (notJudged.empty() ? "" : ", ") + std::string(p);
        else if (c.judged == 0)
            noneRun += (noneRun.empty() ? "" : ", ") + std::string(p);
        failing.insert(failing.end(), c.failing.begin(), c.failing.end());
        notJudgedAll.insert(notJudgedAll.end(), c.notJudged.begin(), c.notJudged.end());
        profiles[p] = {{"verdict", !selected || !profileSelected ? (c.failed ? "FAIL" : "NOT JUDGED")
                                   : c.failed                    ? "FAIL"
                                   : c.judged                    ? "PASS"
                                                                 : "NONE RUN"},
                       {"judged_checks", c.judged},
                       {"passed_checks", c.passed},
                       {"failed_checks", c.failed},
                       {"failing", json(c.failing)},
                       {"not_judged", json(c.notJudged)}};
    }
    // Section 9.2: fast never turns vacuous: a level whose fast checks ran and judged no element at all fails.
    bool const vacuous = selected && cells["fast"].judged > 0 && cells["fast"].failed == 0 && fast.judgedElements == 0;
    std::string const vacuity =
        "the fast checks of level " + level + " judged 0 elements (QSA_FAST lines: " + std::to_string(fast.lines) + ")";
    if (vacuous) {
        failing.push_back(vacuity);
        profiles["fast"]["verdict"] = "FAIL";
    }
    LevelVerdict v;
    v.verdict = failed > 0 || vacuous ? "FAIL" : !selected ? "NOT JUDGED" : judged > 0 ? "PASS" : "NONE RUN";
    std::vector<std::string> parts;
    if (v.verdict == "NOT JUDGED") {
        parts.push_back("QSA_LEVELS=" + levelsAsked);
        v.why = "NOT JUDGED";
    } else {
        if (failed > 0) {
            parts.push_back(std::to_string(failed) + (failed == 1 ? " check: " : " checks: ") + fails);
            v.why = std::to_string(failed) + (failed == 1 ? " check fails" : " checks fail");
        }
        if (vacuous) {
            parts.push_back("its fast checks judged 0 elements");
            v.why += (v.why.empty() ? "" : "; ") + parts.back();
        }
        if (failed == 0 && judged > 0)
            parts.push_back(passes + " checks" + (fast.lines > 0 ? ", " + fastElements(fast) : ""));
        else if (fast.lines > 0)
            parts.push_back(fastElements(fast));
        if (judged == 0) {
            parts.push_back("no check judged");
            v.why = "no check judged";
        } else if (!noneRun.empty()) {
            parts.push_back("no " + (noneRun == "none" ? std::string("profile-none") : noneRun) + " check ran");
        }
        if (!notJudged.empty())
            parts.push_back(notJudged + " not judged");
    }
    std::string const paren = join(parts, "; ");
    v.line = level + ": " + v.verdict + (paren.empty() ? "" : " (" + paren + ")");
    out = {{"verdict", v.verdict},    {"certified", v.verdict == "PASS"}, {"judged_checks", judged},
           {"passed_checks", passed}, {"failed_checks", failed},          {"profiles", profiles},
           {"failing", failing},      {"not_judged", notJudgedAll},       {"line", v.line}};
    if (vacuous)
        out["vacuous"] = vacuity;
    if (fast.lines > 0)
        out["fast"] = {{"qsa_fast_lines", fast.lines},
                       {"judged_elements", fast.judgedElements},
                       {"unjudged_elements", fast.unjudgedElements},
                       {"judged_rows", fast.judgedRows},
                       {"ambiguous_rows", fast.ambiguousRows},
                       {"eps_r", json(fast.epsR)}};
    return v;
}

// "core (profiles none, fast)": the profiles judged at a certified level.
std::string certifiedAs(std::string const& level, std::map<std::string, Cell>& cells) {
    std::vector<std::string> ps;
    for (char const* p : kProfiles)
        if (cells[p].judged > 0)
            ps.push_back(p);
    return level + " (profile" + (ps.size() > 1 ? "s " : " ") + join(ps, ", ") + ")";
}

} // namespace

void computeVerdicts(json& cert) {
    bool all = cert.contains("gpus") && cert["gpus"].is_array() && !cert["gpus"].empty();
    json const budget = cert.value("budget", json::object());
    bool const wantProps = budget.value("properties", true);
    bool const wantExhaustive = budget.value("exhaustive", true);
    Tally t;
    t.sel = checks::parseSelection(budget.value("levels", ""), budget.value("profile", ""));
    checks::CheckInfo const exhaustive = checks::lookup("Exhaustive.Primitives");
    checks::CheckInfo const sassCheck = checks::lookup("Certify.SassCarried");
    bool const exhaustiveJudged = t.sel.judged(exhaustive);
    if (all) {
        for (json& gpu : cert["gpus"]) {
            std::string const where = "GPU " + std::to_string(gpu.value("index", 0));
            json const sass = gpu.value("sass", json::object());
            bool ok = sass.value("carried", false) || sass.value("ptx_jit_allowed", false);
            // The precondition of every other check, not evidence of a level: counted only when it fails.
            if (!ok)
                t.record(sassCheck, "FAIL", "Certify.SassCarried (" + where + ")");
            if (wantProps) {
                ok = ok && gpu.contains("contracts") && !gpu["contracts"].empty();
                for (json& c : gpu["contracts"]) {
                    bool cok = c.contains("properties") && !c["properties"].empty();
                    bool anyJudged = false;
                    int64_t cases = 0;
                    for (json& p : c["properties"]) {
                        if (!p.contains("verdict")) {
                            p["verdict"] = "FAIL";
                        }
                        classify(p, p.value("fast", json::array()), t, where);
                        if (p["verdict"] == "NOT_JUDGED") {
                            continue;
                        }
                        anyJudged = true;
                        cok = cok && isPass(p);
                        if (p.value("cases_run", json()).is_number_integer()) {
                            cases += p["cases_run"].get<int64_t>();
                        }
                    }
                    c["cases_run"] = cases;
                    c["verdict"] = !anyJudged && cok ? "NOT_JUDGED" : verdictOf(cok);
                    ok = ok && cok;
                }
            }
            if (!gpu.contains("suites")) {
                gpu["suites"] = json::array();
            }
            for (json& suite : gpu["suites"]) {
                bool sok = suite.value("error", "").empty();
                if (!sok)
                    t.record("", "", "FAIL", suite.value("name", "?") + " did not run (" + where + ")");
                for (json& test : suite["tests"]) {
                    classify(test, suite.value("fast", json::array()), t, where);
                    sok = sok && (test.value("verdict", "FAIL") == "PASS" || test.value("verdict", "") == "NOT_JUDGED");
                }
                suite["verdict"] = verdictOf(sok);
                ok = ok && sok;
            }
            if (wantExhaustive && exhaustiveJudged) {
                if (!gpu.contains("exhaustive")) {
                    gpu["exhaustive"] = json{{"error", "not run"}};
                }
                verdictOfExhaustive(gpu["exhaustive"]);
                t.record(exhaustive, gpu["exhaustive"]["verdict"].get<std::string>(),
                         "Exhaustive.Primitives (" + where + ")");
                ok = ok && isPass(gpu["exhaustive"]);
            } else if (wantExhaustive) {
                gpu["exhaustive"] = json{{"verdict", "NOT_JUDGED"}};
                t.record(exhaustive, "NOT_JUDGED", "Exhaustive.Primitives (" + where + ")");
            }
            gpu["verdict"] = verdictOf(ok);
            all = all && ok;
        }
    }
    // Per level, and inside it per profile (contract section 8); the first line says where it is certified.
    json levels = json::object();
    std::vector<std::string> lines, certified, notCertified;
    json certifiedLevels = json::array();
    std::string const levelsAsked = budget.value("levels", "core,hardened");
    for (char const* level : kLevels) {
        LevelVerdict const v = levelVerdict(level, t, levelsAsked, levels[level]);
        lines.push_back(v.line);
        if (v.verdict == "PASS") {
            certified.push_back(certifiedAs(level, t.cells[level]));
            certifiedLevels.push_back(level);
        } else {
            notCertified.push_back(std::string(level) + " (" + v.why + ")");
        }
        all = all && v.verdict != "FAIL"; // e.g. the fast checks judged 0 elements
    }
    std::string const first = "certified: " + (certified.empty() ? std::string("none") : join(certified, ", ")) +
                              (notCertified.empty() ? "" : "; not certified: " + join(notCertified, ", "));
    lines.insert(lines.begin(), first);
    if (t.replayTests > 0) {
        int64_t const failedReplay = t.replayTests - t.replayPassed - t.replayNotJudged;
        lines.push_back("fixture replay: " + std::to_string(t.replayPassed) + "/" +
                        std::to_string(t.replayTests - t.replayNotJudged) + " fixture tests pass" +
                        (t.replayNotJudged ? ", " + std::to_string(t.replayNotJudged) + " not judged" : "") +
                        (failedReplay ? " (the checks they fail are counted in their levels above)" : ""));
        cert["fixture_replay"] = {{"tests", t.replayTests},
                                  {"passed", t.replayPassed},
                                  {"failed", failedReplay},
                                  {"not_judged", t.replayNotJudged}};
    }
    cert["levels"] = levels;
    cert["certified"] = certifiedLevels;
    cert["certified_line"] = first;
    cert["summary"] = lines;
    cert["verdict"] = verdictOf(all);
}

std::string renderJson(json const& cert) {
    return cert.dump(2) + "\n";
}

std::string renderMarkdown(json const& cert) {
    std::ostringstream md;
    json const git = cert.value("git", json::object());
    json const build = cert.value("build", json::object());
    json const cuda = cert.value("cuda", json::object());
    json const budget = cert.value("budget", json::object());
    md << "# QSA indexer certificate: " << cert.value("verdict", "FAIL")
       << (cert.value("dry_run", false) ? " (CPU DRY RUN of certify itself: not a certificate)" : "") << "\n\n";
    // The summary: where it is certified, then one line per level (its profiles inside) and the fixture replay.
    json const summary = cert.value("summary", json::array());
    for (size_t i = 0; i < summary.size(); ++i)
        md << (i == 0 ? "**" : "- ") << summary[i].get<std::string>() << (i == 0 ? "**\n\n" : "\n");
    md << "\n";
    if (cert.contains("qsa_mutant")) {
        md << "**QSA_MUTANT=" << cert["qsa_mutant"].get<std::string>()
           << " was set: if this build has mutants enabled, a mutant was certified, not the production kernels.**\n\n";
    }
    md << "| item | value |\n|---|---|\n";
    md << "| git commit | `" << git.value("commit", "unknown") << "` (" << git.value("source", "unknown") << ") |\n";
    md << "| CUDA toolkit (compile time, CUDART_VERSION) | "
       << cudaVersion(build.value("cuda_toolkit_compiled", json())) << " |\n";
    md << "| CUDA runtime (cudaRuntimeGetVersion) | " << cudaVersion(cuda.value("runtime_version", json())) << " |\n";
    // The kernel module's release, the CUDA version the driver API reports (cudaDriverGetVersion) and the
    // module's whole version line (/proc/driver/nvidia/version) when certify could read it.
    std::string const module = cuda.value("driver_module", "");
    md << "| driver | " << cuda.value("driver_release", "unknown") << " (driver API CUDA "
       << cudaVersion(cuda.value("driver_api_version", json())) << ")" << (module.empty() ? "" : "; " + module)
       << " |\n";
    // The kit (//api:loaded): these rows describe the kit's binaries; the library carries its own code.
    bool const kit = !cert.value("implementation", json::object()).value("library", json::object()).empty();
    md << "| compiled SASS" << (kit ? " (the kit's binaries, not the library)" : "") << " | "
       << joinArchs(build.value("sass_archs", json::array()), "sm_") << " |\n";
    md << "| compiled PTX" << (kit ? " (the kit's binaries)" : "") << " | "
       << joinArchs(build.value("ptx_archs", json::array()), "compute_") << " |\n";
    md << "| budget | scale " << budget.value("scale", 1.0) << ", base seed " << budget.value("base_seed", uint64_t(0))
       << ", exhaustive " << (budget.value("exhaustive", true) ? "yes" : "no") << " |\n";
    md << "| judged | " << budget.value("levels", "core,hardened") << ", profile " << budget.value("profile", "ieee")
       << " (QSA_LEVELS / QSA_PROFILE) |\n";
    md << "| implementation under test | `" << budget.value("impl", "unknown") << "` |\n";
    // The kit (//api:loaded): the library file itself, so the verdict is tied to one build of it.
    json const lib = cert.value("implementation", json::object()).value("library", json::object());
    if (!lib.empty()) {
        md << "| library | `" << lib.value("path", "?") << "`, " << lib.value("bytes", uint64_t(0)) << " bytes |\n";
        md << "| library sha256 | `" << lib.value("sha256", "?") << "` |\n";
        md << "| library ELF build id | `" << lib.value("build_id", "none") << "` |\n";
        md << "| library CUDA runtime | " << lib.value("cuda_runtime", "?")
           << "; device code: " << lib.value("nvcc", "?") << " |\n";
        md << "| library check | " << lib.value("check", "") << " |\n";
    }
    md << "| GPUs certified | " << cert.value("gpus", json::array()).size() << " |\n\n";
    md << "Per level and profile (contract section 8):\n\n";
    json const levels = cert.value("levels", json::object()); // items() must not outlive it
    for (auto const& [level, v] : levels.items()) {
        json const profiles = v.value("profiles", json::object());
        for (char const* profile : kProfiles) {
            json const c = profiles.value(profile, json::object());
            md << "- " << level << ", profile " << profile << ": " << c.value("verdict", "?");
            if (c.value("judged_checks", 0) > 0)
                md << ", " << c.value("passed_checks", 0) << "/" << c.value("judged_checks", 0) << " checks pass";
            md << "\n";
            for (auto const& f : c.value("failing", json::array()))
                md << "  - FAIL: " << f.get<std::string>() << "\n";
            for (auto const& f : c.value("not_judged", json::array()))
                md << "  - not judged: " << f.get<std::string>() << "\n";
        }
        if (v.contains("fast")) {
            json const& f = v["fast"];
            md << "- " << level << ", profile fast judged " << f.value("judged_elements", int64_t(0)) << " elements ("
               << f.value("unjudged_elements", int64_t(0)) << " unjudged), " << f.value("judged_rows", int64_t(0))
               << " rows (" << f.value("ambiguous_rows", int64_t(0)) << " ambiguous) in "
               << f.value("qsa_fast_lines", int64_t(0)) << " QSA_FAST lines, eps_r "
               << f.value("eps_r", json::array()).dump() << "\n";
        }
        if (v.contains("vacuous"))
            md << "- " << level << " FAIL: " << v["vacuous"].get<std::string>() << "\n";
    }
    md << "\n";

    std::ostringstream failures;
    for (json const& gpu : cert.value("gpus", json::array())) {
        int const idx = gpu.value("index", 0);
        json const sass = gpu.value("sass", json::object());
        md << "## GPU " << idx << ": " << gpu.value("name", "?") << " (sm_" << gpu.value("sm", "?")
           << "): " << gpu.value("verdict", "FAIL") << "\n\n";
        md << "- uuid `" << gpu.value("uuid", "?") << "`, PCI " << gpu.value("pci_bus_id", "?")
           << ", CUDA_VISIBLE_DEVICES=" << gpu.value("cuda_visible_devices", "?") << "\n";
        md << "- SASS: " << sass.value("message", "?");
        if (!sass.value("carried", false)) {
            md << (sass.value("ptx_jit_allowed", false) ? " (allowed by --allow-ptx-jit)" : " (refused)");
        }
        md << "\n\n";
        if (gpu.contains("contracts")) {
            md << "| contract | verdict | cases | seconds |\n|---|---|---|---|\n";
            for (json const& c : gpu["contracts"]) {
                md << "| " << c.value("number", 0) << ". " << c.value("name", "?") << " | "
                   << c.value("verdict", "FAIL") << " | " << c.value("cases_run", 0) << " | " << seconds(c) << " |\n";
            }
            md << "\n| property | level | profile | cases | seed | verdict | seconds "
                  "|\n|---|---|---|---|---|---|---|\n";
            for (json const& c : gpu["contracts"]) {
                for (json const& p : c.value("properties", json::array())) {
                    md << "| " << p.value("id", "?") << " | " << p.value("level", "?") << " | "
                       << p.value("profile", "?") << " | " << casesText(p.value("cases_run", json())) << " | "
                       << p.value("seed", uint64_t(0)) << " | " << p.value("verdict", "FAIL") << " | " << seconds(p)
                       << " |\n";
                    if (isPass(p) || p.value("verdict", "") == "NOT_JUDGED") {
                        continue;
                    }
                    failures << "- GPU " << idx << ", contract " << c.value("number", 0) << ", `" << p.value("id", "?")
                             << "` [level=" << p.value("level", "?") << " profile=" << p.value("profile", "?")
                             << "] (`RC_PARAMS=\"" << p.value("rc_params", "") << "\"`)\n";
                    for (auto const& f : p.value("failures", json::array())) {
                        failures << "  - " << firstLine(f.get<std::string>()) << "\n";
                    }
                    for (auto const& f : p.value("fixtures", json::array())) {
                        failures << "  - fixture: `" << f.get<std::string>() << "`\n";
                    }
                    failures << "  - log: `" << p.value("log", "") << "`\n";
                }
            }
            md << "\n";
        }
        for (json const& suite : gpu.value("suites", json::array())) {
            md << suite.value("name", "?") << " (`" << suite.value("binary", "?")
               << "`): " << suite.value("verdict", "FAIL") << ", " << suite.value("tests", json::array()).size()
               << " tests, " << seconds(suite) << " s\n\n";
            if (!suite.value("error", "").empty())
                failures << "- GPU " << idx << ", " << suite.value("name", "?") << ": " << suite.value("error", "")
                         << "\n";
            for (json const& t : suite.value("tests", json::array())) {
                if (t.value("verdict", "") == "FAIL") {
                    failures << "- GPU " << idx << ", " << suite.value("name", "?") << ", `" << t.value("id", "?")
                             << "` [level=" << t.value("level", "?") << " profile=" << t.value("profile", "?") << "]\n";
                    for (auto const& f : t.value("failed_checks", json::array()))
                        failures << "  - failed check " << f.value("id", "?") << " [level=" << f.value("level", "?")
                                 << " profile=" << f.value("profile", "?") << "]\n";
                    for (auto const& f : t.value("failures", json::array()))
                        failures << "  - " << firstLine(f.get<std::string>()) << "\n";
                }
            }
        }
        if (!gpu.value("stage_tests_line", "").empty())
            md << gpu.value("stage_tests_line", "") << "\n\n";
        if (!gpu.value("coverage", json::array()).empty()) {
            md << "Coverage (QSA_COVERAGE lines of the children):\n\n```\n";
            for (auto const& l : gpu["coverage"])
                md << l.get<std::string>() << "\n";
            md << "```\n\n";
        }
        if (gpu.contains("exhaustive") && gpu["exhaustive"].value("verdict", "") == "NOT_JUDGED") {
            md << "Exhaustive scalar checks: NOT JUDGED (profile ieee not selected)\n\n";
        } else if (gpu.contains("exhaustive")) {
            json const& ex = gpu["exhaustive"];
            md << "Exhaustive scalar checks (device vs reference, bit for bit): " << ex.value("verdict", "FAIL") << ", "
               << seconds(ex) << " s\n\n";
            if (!ex.value("error", "").empty()) {
                md << "- error: " << firstLine(ex.value("error", "")) << "\n\n";
                failures << "- GPU " << idx << ", exhaustive checks: " << firstLine(ex.value("error", "")) << " (log `"
                         << ex.value("log", "") << "`)\n";
            }
            md << "| check | device function | inputs | mismatches |\n|---|---|---|---|\n";
            json const checks = ex.value("checks", json::object()); // items() must not outlive it
            for (auto const& [name, c] : checks.items()) {
                md << "| " << name << " | `" << c.value("device_function", "?") << "` | "
                   << c.value("inputs", int64_t(0)) << " | " << c.value("mismatches", int64_t(-1)) << " |\n";
                if (c.value("mismatches", int64_t(0)) != 0) {
                    failures << "- GPU " << idx << ", exhaustive " << name << ": " << c.value("mismatches", int64_t(0))
                             << " mismatches, first " << c.value("examples", json::array()).dump() << "\n";
                }
            }
            md << "\n";
        }
    }
    std::string const f = failures.str();
    md << "## Failures\n\n" << (f.empty() ? "None.\n" : f);
    md << "\nReproduce one property: `CUDA_VISIBLE_DEVICES=<i> RC_PARAMS=\"<rc_params>\" "
          "<binary> --gtest_filter=<property>` (binaries under the runfiles of //tools:certify).\n";
    json const times = cert.value("times", json::object());
    md << "\nStarted " << times.value("started_utc", "?") << ", total " << times.value("total_seconds", 0.0) << " s.\n";
    return md.str();
}

} // namespace certify
} // namespace qsa

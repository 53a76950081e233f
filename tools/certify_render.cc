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

} // namespace

namespace {

// Per group of contract section 8: failing checks (id and where) and checks not judged.
struct Groups {
    checks::Selection sel;
    std::map<std::string, std::set<std::string>> failing, notJudged;
    std::map<std::string, int64_t> judged;
    // Profile fast (contract section 9.2): the sums of the QSA_FAST lines of the judged fast checks.
    struct Fast {
        int64_t lines = 0, judgedElements = 0, unjudgedElements = 0, judgedRows = 0, ambiguousRows = 0;
        std::set<std::string> epsR;
    } fast;
    void fail(std::string const& level, std::string const& profile, std::string const& what) {
        checks::CheckInfo c;
        c.level = level;
        c.profile = profile;
        failing[checks::groupOf(c)].insert(what);
    }
};

bool groupSelected(checks::Selection const& s, std::string const& g) {
    if (g == "ieee differential" || g == "fast differential")
        return s.profile + " differential" == g;
    return s.levels.count(g) != 0;
}

// A judged check of profile fast: its QSA_FAST line(s) among `lines` (the child's, by id) are summed; one that
// passed without any, or with a malformed one, FAILS (verdict and group; section 9.2: a fast check reports what
// it judged, so it never passes vacuously).
void countFast(json& p, json const& lines, Groups& g, std::string const& where) {
    std::string const check = p.value("id", "?");
    bool any = false;
    for (auto const& l : lines) {
        std::string const text = l.is_string() ? l.get<std::string>() : "";
        std::optional<FastJudged> const f = parseFastLine(text);
        if (!f) {
            if (text.rfind("QSA_FAST " + check + " ", 0) == 0) {
                g.fail("core", "fast", check + " printed a malformed QSA_FAST line (" + where + ")");
                p["verdict"] = "FAIL";
                p["failures"].push_back("malformed QSA_FAST line: " + text);
            }
            continue;
        }
        if (f->id != check)
            continue;
        any = true;
        g.fast.lines += 1;
        g.fast.judgedElements += f->judgedElements;
        g.fast.unjudgedElements += f->unjudgedElements;
        g.fast.judgedRows += f->judgedRows;
        g.fast.ambiguousRows += f->ambiguousRows;
        g.fast.epsR.insert(f->epsR);
    }
    if (!any && p.value("verdict", "") == "PASS") {
        g.fail("core", "fast", check + " passed without a QSA_FAST line (" + where + ")");
        p["verdict"] = "FAIL";
        p["failures"].push_back("passed without a QSA_FAST line: a profile-fast check must report what it judged "
                                "(contract section 9.2)");
    }
}

// "judged 1.2M elements, 0.3% rows ambiguous, eps_r 2^-21"
std::string fastSummary(Groups::Fast const& f) {
    std::string s = "judged " + shortCount(f.judgedElements) + " elements, ";
    if (f.judgedRows == 0) {
        s += "no rows judged";
    } else {
        char pct[32];
        double const r = 100.0 * double(f.ambiguousRows) / double(f.judgedRows);
        std::snprintf(pct, sizeof(pct), r > 0 && r < 0.05 ? "<0.1%%" : "%.1f%%", r);
        s += std::string(pct) + " rows ambiguous";
    }
    std::string eps;
    for (std::string const& e : f.epsR)
        eps += (eps.empty() ? "" : ", ") + e;
    return s + ", eps_r " + (f.epsR.size() > 1 ? "mixed (" + eps + ")" : eps);
}

// A property or gtest result: fills level / profile from the registry when absent; NOT_JUDGED stays so.
void classify(json& p, Groups& g, std::string const& where) {
    checks::CheckInfo const info = checks::lookup(p.value("id", ""));
    if (!p.contains("level")) {
        p["level"] = info.registered() ? info.level : "unregistered";
        p["profile"] = info.registered() ? info.profile : "unregistered";
    }
    std::string const verdict = p.value("verdict", "FAIL");
    std::string const id = p.value("id", "?") + " (" + where + ")";
    checks::CheckInfo c;
    c.level = p["level"].get<std::string>();
    c.profile = p["profile"].get<std::string>();
    if (verdict == "NOT_JUDGED") {
        g.notJudged[checks::groupOf(c)].insert(id);
        return;
    }
    g.judged[checks::groupOf(c)] += 1;
    if (verdict == "PASS")
        return;
    // A failing test that names its failed checks (fixture replay) is counted per check.
    bool named = false;
    for (auto const& f : p.value("failed_checks", json::array())) {
        g.fail(f.value("level", c.level), f.value("profile", c.profile), f.value("id", "?") + " in " + id);
        named = true;
    }
    if (!named)
        g.fail(c.level, c.profile, id);
}

} // namespace

void computeVerdicts(json& cert) {
    bool all = cert.contains("gpus") && cert["gpus"].is_array() && !cert["gpus"].empty();
    json const budget = cert.value("budget", json::object());
    bool const wantProps = budget.value("properties", true);
    bool const wantExhaustive = budget.value("exhaustive", true);
    Groups groups;
    groups.sel = checks::parseSelection(budget.value("levels", ""), budget.value("profile", ""));
    bool const exhaustiveJudged = groups.sel.judged(checks::lookup("Exhaustive.Primitives"));
    if (all) {
        for (json& gpu : cert["gpus"]) {
            std::string const where = "GPU " + std::to_string(gpu.value("index", 0));
            json const sass = gpu.value("sass", json::object());
            bool ok = sass.value("carried", false) || sass.value("ptx_jit_allowed", false);
            if (!ok)
                groups.fail("core", "none", "Certify.SassCarried (" + where + ")");
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
                        classify(p, groups, where);
                        if (p["verdict"] == "NOT_JUDGED") {
                            continue;
                        }
                        anyJudged = true;
                        if (p.value("profile", "") == "fast")
                            countFast(p, p.value("fast", json::array()), groups, where);
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
                    groups.fail("core", "none", suite.value("name", "?") + " did not run (" + where + ")");
                for (json& t : suite["tests"]) {
                    classify(t, groups, where);
                    if (t.value("profile", "") == "fast" && t.value("verdict", "") != "NOT_JUDGED")
                        countFast(t, suite.value("fast", json::array()), groups, where);
                    sok = sok && (t.value("verdict", "FAIL") == "PASS" || t.value("verdict", "") == "NOT_JUDGED");
                }
                suite["verdict"] = verdictOf(sok);
                ok = ok && sok;
            }
            if (wantExhaustive && exhaustiveJudged) {
                if (!gpu.contains("exhaustive")) {
                    gpu["exhaustive"] = json{{"error", "not run"}};
                }
                verdictOfExhaustive(gpu["exhaustive"]);
                groups.judged["ieee differential"] += 1;
                if (!isPass(gpu["exhaustive"]))
                    groups.fail("core", "ieee", "Exhaustive.Primitives (" + where + ")");
                ok = ok && isPass(gpu["exhaustive"]);
            } else if (wantExhaustive) {
                gpu["exhaustive"] = json{{"verdict", "NOT_JUDGED"}};
                groups.notJudged["ieee differential"].insert("Exhaustive.Primitives (" + where + ")");
            }
            gpu["verdict"] = verdictOf(ok);
            all = all && ok;
        }
    }
    // Per level and profile (contract section 8).
    json levels = json::object();
    std::string line;
    for (std::string const& g : checks::groups()) {
        bool const selected = groupSelected(groups.sel, g);
        bool const fast = g == "fast differential";
        // Section 9.2: fast never turns vacuous; checks that ran and judged no element fail the group.
        if (fast && selected && groups.judged[g] > 0 && groups.fast.judgedElements == 0 && groups.failing[g].empty())
            groups.failing[g].insert(
                "the fast checks judged 0 elements (QSA_FAST lines: " + std::to_string(groups.fast.lines) + ")");
        size_t const nFail = groups.failing[g].size();
        // A selected group in which no check ran is not a pass either (e.g. --contracts left it out).
        std::string const v = !selected ? "NOT JUDGED" : nFail ? "FAIL" : groups.judged[g] ? "PASS" : "NONE RUN";
        levels[g] = {{"verdict", v},
                     {"judged_checks", groups.judged[g]},
                     {"failing", json(groups.failing[g])},
                     {"not_judged", json(groups.notJudged[g])}};
        std::vector<std::string> notes;
        if (nFail)
            notes.push_back(std::to_string(nFail) + (nFail == 1 ? " check" : " checks"));
        if (fast && selected && groups.fast.lines > 0) {
            levels[g]["fast"] = {{"qsa_fast_lines", groups.fast.lines},
                                 {"judged_elements", groups.fast.judgedElements},
                                 {"unjudged_elements", groups.fast.unjudgedElements},
                                 {"judged_rows", groups.fast.judgedRows},
                                 {"ambiguous_rows", groups.fast.ambiguousRows},
                                 {"eps_r", json(groups.fast.epsR)}};
            notes.push_back(fastSummary(groups.fast));
        }
        std::string note;
        for (std::string const& n : notes)
            note += (note.empty() ? "" : "; ") + n;
        line += (line.empty() ? "" : ", ") + g + ": " + v + (note.empty() ? "" : " (" + note + ")");
    }
    cert["levels"] = levels;
    for (auto const& [g, l] : levels.items())
        all = all && l.value("verdict", "") != "FAIL"; // e.g. the fast checks judged 0 elements
    cert["verdict_line"] = line;
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
    md << "| compiled SASS | " << joinArchs(build.value("sass_archs", json::array()), "sm_") << " |\n";
    md << "| compiled PTX | " << joinArchs(build.value("ptx_archs", json::array()), "compute_") << " |\n";
    md << "| budget | scale " << budget.value("scale", 1.0) << ", base seed " << budget.value("base_seed", uint64_t(0))
       << ", exhaustive " << (budget.value("exhaustive", true) ? "yes" : "no") << " |\n";
    md << "| judged | " << budget.value("levels", "core,hardened") << ", profile " << budget.value("profile", "ieee")
       << " (QSA_LEVELS / QSA_PROFILE) |\n";
    md << "| implementation under test | `" << budget.value("impl", "unknown") << "` |\n";
    md << "| GPUs certified | " << cert.value("gpus", json::array()).size() << " |\n\n";
    md << "**Per level and profile (contract section 8): " << cert.value("verdict_line", "?") << "**\n\n";
    json const levels = cert.value("levels", json::object()); // items() must not outlive it
    for (auto const& [g, v] : levels.items()) {
        for (auto const& f : v.value("failing", json::array()))
            md << "- " << g << " FAIL: " << f.get<std::string>() << "\n";
        for (auto const& f : v.value("not_judged", json::array()))
            md << "- " << g << " not judged: " << f.get<std::string>() << "\n";
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

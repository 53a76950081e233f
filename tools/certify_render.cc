// Verdicts and rendering of the certificate (see certify_core.h). The certificate is plain JSON built by
// certify_main.cc; every key named "seconds" or under "times" is a time, everything else is a deterministic
// function of the build, the machine and the options.
#include "tools/certify_core.h"

#include <cstdio>
#include <regex>
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
    static std::regex const noise("^(\\S+:[0-9]+:?|Failed|)$");
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

void computeVerdicts(json& cert) {
    bool all = cert.contains("gpus") && cert["gpus"].is_array() && !cert["gpus"].empty();
    json const budget = cert.value("budget", json::object());
    bool const wantProps = budget.value("properties", true);
    bool const wantExhaustive = budget.value("exhaustive", true);
    if (all) {
        for (json& gpu : cert["gpus"]) {
            json const sass = gpu.value("sass", json::object());
            bool ok = sass.value("carried", false) || sass.value("ptx_jit_allowed", false);
            if (wantProps) {
                ok = ok && gpu.contains("contracts") && !gpu["contracts"].empty();
                for (json& c : gpu["contracts"]) {
                    bool cok = c.contains("properties") && !c["properties"].empty();
                    int64_t cases = 0;
                    for (json& p : c["properties"]) {
                        if (!p.contains("verdict")) {
                            p["verdict"] = "FAIL";
                        }
                        cok = cok && isPass(p);
                        if (p.value("cases_run", json()).is_number_integer()) {
                            cases += p["cases_run"].get<int64_t>();
                        }
                    }
                    c["cases_run"] = cases;
                    c["verdict"] = verdictOf(cok);
                    ok = ok && cok;
                }
            }
            if (wantExhaustive) {
                if (!gpu.contains("exhaustive")) {
                    gpu["exhaustive"] = json{{"error", "not run"}};
                }
                verdictOfExhaustive(gpu["exhaustive"]);
                ok = ok && isPass(gpu["exhaustive"]);
            }
            gpu["verdict"] = verdictOf(ok);
            all = all && ok;
        }
    }
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
    md << "| driver | " << cuda.value("driver_release", "unknown") << " (CUDA "
       << cudaVersion(cuda.value("driver_api_version", json())) << ") |\n";
    md << "| compiled SASS | " << joinArchs(build.value("sass_archs", json::array()), "sm_") << " |\n";
    md << "| compiled PTX | " << joinArchs(build.value("ptx_archs", json::array()), "compute_") << " |\n";
    md << "| budget | scale " << budget.value("scale", 1.0) << ", base seed " << budget.value("base_seed", uint64_t(0))
       << ", exhaustive " << (budget.value("exhaustive", true) ? "yes" : "no") << " |\n";
    md << "| GPUs certified | " << cert.value("gpus", json::array()).size() << " |\n\n";

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
            md << "\n| property | cases | seed | verdict | seconds |\n|---|---|---|---|---|\n";
            for (json const& c : gpu["contracts"]) {
                for (json const& p : c.value("properties", json::array())) {
                    md << "| " << p.value("id", "?") << " | " << casesText(p.value("cases_run", json())) << " | "
                       << p.value("seed", uint64_t(0)) << " | " << p.value("verdict", "FAIL") << " | " << seconds(p)
                       << " |\n";
                    if (isPass(p)) {
                        continue;
                    }
                    failures << "- GPU " << idx << ", contract " << c.value("number", 0) << ", `" << p.value("id", "?")
                             << "` (`RC_PARAMS=\"" << p.value("rc_params", "") << "\"`)\n";
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
        if (gpu.contains("exhaustive")) {
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

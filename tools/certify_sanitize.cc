// Certify's compute-sanitizer part (see certify_sanitize.h).
#include "tools/certify_sanitize.h"

#include "tools/certify_core.h"

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace qsa {
namespace certify {
namespace sanitize {

using nlohmann::json;

std::optional<Pair> parseLine(std::string const& line) {
    static std::regex const re(
        R"(^(memcheck|racecheck|initcheck|synccheck)\s+(\S+)\s+errors=(\S+)\s+hazards=(\S+)\s+([0-9]+(?:\.[0-9]+)?) s\s+(PASS|FAIL)\s*(.*)$)");
    std::smatch m;
    if (!std::regex_match(line, m, re)) {
        return std::nullopt;
    }
    Pair p;
    p.tool = m[1];
    p.binary = m[2];
    p.errors = m[3];
    p.hazards = m[4];
    p.seconds = std::stod(m[5]);
    p.verdict = m[6];
    p.note = m[7];
    return p;
}

json summarize(std::string const& stdoutText, int exitStatus, std::vector<std::string> const& tools) {
    json pairs = json::array();
    int failed = 0;
    double slowest = 0;
    std::stringstream ss(stdoutText);
    std::string line;
    std::string summaryLine;
    while (std::getline(ss, line)) {
        if (std::optional<Pair> p = parseLine(line)) {
            failed += p->verdict == "PASS" ? 0 : 1;
            slowest = std::max(slowest, p->seconds);
            json j = {{"tool", p->tool},       {"binary", p->binary},   {"errors", p->errors},
                      {"hazards", p->hazards}, {"seconds", p->seconds}, {"verdict", p->verdict}};
            if (!p->note.empty()) {
                j["note"] = p->note;
            }
            pairs.push_back(j);
        } else if (line.rfind("run_all --sanitize:", 0) == 0) {
            summaryLine = line;
        }
    }
    bool const pass = !pairs.empty() && failed == 0 && exitStatus == 0;
    json r = {{"tools", tools},
              {"pairs", pairs},
              {"failed", failed},
              {"slowest_seconds", slowest},
              {"summary", summaryLine},
              {"exit_status", exitStatus},
              {"verdict", pass ? "PASS" : "FAIL"}};
    if (pairs.empty()) {
        r["error"] = "run_all.sh --sanitize printed no (tool, binary) line";
    }
    return r;
}

json notRun(std::string const& reason) {
    return {{"verdict", "NOT RUN"}, {"reason", reason}};
}

json run(Options const& o, std::string const& bundleRoot, std::string const& logDir) {
    if (!o.enabled) {
        return notRun("--no-sanitizers");
    }
    if (bundleRoot.empty()) {
        return notRun("not in a GPU bundle (tools/gpu_bundle.sh): run_all.sh --sanitize needs the bundle's binaries");
    }
    std::filesystem::path const script = std::filesystem::path(bundleRoot) / "run_all.sh";
    if (!std::filesystem::exists(script)) {
        return notRun("the bundle has no run_all.sh");
    }
    std::string const cmd = "LOGDIR='" + logDir + "' '" + script.string() + "' --sanitize " + join(o.tools, ",") +
                            " -j " + std::to_string(o.jobs) + " 2>&1";
    std::fprintf(stderr, "certify: sanitizers: %s\n", cmd.c_str());
    std::string out;
    int const rc = runCapture(cmd, out, stderr); // live progress: one line per finished pair
    if (rc < 0) {
        return notRun("could not start " + script.string());
    }
    if (rc == 2 && out.find("compute-sanitizer not found") != std::string::npos) {
        return notRun("compute-sanitizer not found on this host");
    }
    json r = summarize(out, rc, o.tools);
    r["log_dir"] = logDir;
    return r;
}

void applyVerdict(json& cert) {
    if (cert.contains("sanitizers") && cert["sanitizers"].value("verdict", "") == "FAIL") {
        cert["verdict"] = "FAIL";
    }
}

std::string markdown(json const& cert) {
    if (!cert.contains("sanitizers")) {
        return "";
    }
    json const& s = cert["sanitizers"];
    std::ostringstream os;
    os << "\n## compute-sanitizer (memcheck, racecheck: every GPU test binary)\n\n";
    std::string const v = s.value("verdict", "?");
    if (v == "NOT RUN") {
        os << "**NOT RUN**: " << s.value("reason", "") << ". Nothing here is certified race- or error-free.\n";
        return os.str();
    }
    os << "Verdict **" << v << "**: " << s.value("failed", 0) << " of " << s["pairs"].size()
       << " (tool, binary) pairs failed; slowest pair " << s.value("slowest_seconds", 0.0) << " s. "
       << "Budgets: tools/run_all.sh `sanitize_budget`.\n\n";
    os << "| tool | binary | errors | hazards | seconds | verdict |\n|---|---|---:|---:|---:|---|\n";
    for (json const& p : s["pairs"]) {
        os << "| " << p.value("tool", "") << " | " << p.value("binary", "") << " | " << p.value("errors", "") << " | "
           << p.value("hazards", "") << " | " << p.value("seconds", 0.0) << " | " << p.value("verdict", "")
           << (p.contains("note") ? " " + p.value("note", "") : "") << " |\n";
    }
    return os.str();
}

} // namespace sanitize
} // namespace certify
} // namespace qsa

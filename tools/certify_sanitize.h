// Certify's compute-sanitizer part (issue 14): runs the bundle's `run_all.sh --sanitize memcheck,racecheck`
// (every GPU test binary under each tool, budgets of tools/run_all.sh) and records one entry per (tool,
// binary) pair in the certificate under "sanitizers". Kept apart from certify's plan and rendering: the
// parsers and the rendering are pure (//tools:certify_test runs them in CI); only run() spawns.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qsa {
namespace certify {
namespace sanitize {

// certify's flags (certify_core.cc parseArgs): --sanitizers=memcheck,racecheck (the default; any subset of
// run_all.sh's tools), --no-sanitizers (the certificate says "not run"), --sanitize-jobs=N (pairs at a time).
struct Options {
    std::vector<std::string> tools = {"memcheck", "racecheck"};
    bool enabled = true;
    int jobs = 6;
};

// One line of run_all.sh --sanitize, e.g.
// "racecheck kernels/expand_test  errors=0    hazards=0     12.3 s  PASS".
struct Pair {
    std::string tool, binary, errors, hazards, verdict, note;
    double seconds = 0;
};
std::optional<Pair> parseLine(std::string const& line);

// The "sanitizers" object from run_all.sh's stdout and exit status: verdict PASS iff at least one pair ran,
// every pair passed and the script exited 0.
nlohmann::json summarize(std::string const& stdoutText, int exitStatus, std::vector<std::string> const& tools);
// The "sanitizers" object of a part that did not run: verdict "NOT RUN" and the reason.
nlohmann::json notRun(std::string const& reason);

// Runs `<bundleRoot>/run_all.sh --sanitize ... -j N` with LOGDIR=logDir; "" bundleRoot: not run.
nlohmann::json run(Options const& o, std::string const& bundleRoot, std::string const& logDir);

// Applies the part's verdict to the certificate's ("FAIL" makes the certificate FAIL; "NOT RUN" is shown,
// never counted as a pass of the part).
void applyVerdict(nlohmann::json& cert);
// A markdown section for certificate.md.
std::string markdown(nlohmann::json const& cert);

} // namespace sanitize
} // namespace certify
} // namespace qsa

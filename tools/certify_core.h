// Pure parts of the architecture certification tool (issue 7): the plan (contracts, per-property budgets,
// seeds), the SASS decision, parsers of child outputs, progress formatting, verdicts and the certificate's
// rendering. Nothing here touches a GPU or spawns a process (but runCapture), so //tools:certify_test runs it in CI.
#pragma once

#include <nlohmann/json.hpp>

#include "tools/certify_sanitize.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qsa {
namespace certify {

// "a, b, c": the strings of `items` (a vector or a set) with `sep` between them.
template <typename Strings>
std::string join(Strings const& items, char const* sep) {
    std::string s;
    for (std::string const& x : items)
        s += (s.empty() ? "" : sep) + x;
    return s;
}

// Runs shell command `cmd`: its stdout into `out` (each line also copied to `echo` when given); returns its exit
// status (128 when it did not exit, -1 when it could not start).
int runCapture(std::string const& cmd, std::string& out, std::FILE* echo = nullptr);

// ---- devices and architectures --------------------------------------------------------------------

// "80,90a" -> {"80", "90a"}; blanks ignored. Throws std::runtime_error on a token that is not digits with an
// optional one-letter suffix (a: arch-specific, f: family-specific).
std::vector<std::string> splitArchList(std::string const& list);

// Whether a binary carrying SASS for `sassArchs` (QSA_SASS_ARCHS) runs native code on a device of compute
// capability major.minor: a cubin sm_XY runs on X.Z for Z >= Y (same major); sm_XYa only on X.Y exactly; sm_XYf
// on X.Z, Z >= Y. Otherwise the driver can only JIT-compile PTX at load.
struct SassDecision {
    bool carried = false;
    bool exact = false;    // a cubin for exactly this SM
    std::string cubinArch; // the cubin the driver loads ("" when none)
    std::string message;   // one readable sentence
};
SassDecision sassFor(std::string const& sassArchs, int major, int minor);

// CUDA_VISIBLE_DEVICES for a child pinned to certify's visible GPU `index`: the index-th entry of the parent's
// CUDA_VISIBLE_DEVICES when that is set (so "2,3" maps 1 -> "3"), else the index itself.
std::string childVisibleDevices(char const* parentValue, int index);

// The NVIDIA kernel module's version from the text of /proc/driver/nvidia/version: its "NVRM version:" line,
// e.g. "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@...)
// Thu Jan 23 ..." -> release "580.159.04", module "NVIDIA UNIX Open Kernel Module for x86_64 580.159.04 Release
// Build (dvs-builder@...) Thu Jan 23 ..." (blanks collapsed). nullopt when the text has no such line or the line
// no dotted version after "Kernel Module". A certificate names the driver it was made with: this and
// cudaDriverGetVersion (NVML is not linked).
struct DriverModule {
    std::string release;
    std::string module;
};
std::optional<DriverModule> parseNvidiaDriverVersion(std::string const& procText);

// ---- the plan -------------------------------------------------------------------------------------------

struct ContractSpec {
    int number;            // contract section 7 number
    std::string name;      // short name
    std::string test;      // CPU property test target in //properties ("" for GPU-only stage tests)
    std::string gpuBinary; // workspace-relative GPU binary, e.g. "properties/layout_test_gpu"
};
// The eight contracts of section 7, in order, then the stage properties: generated from
// properties/contracts.bzl (THE contract list) at build time.
std::vector<ContractSpec> const& contracts();
std::vector<ContractSpec> const& stageProperties();

// Certify's budgets: every property's pre-merge default times ONE factor, kCertifyBudgetFactor * --scale,
// passed to the children as QSA_BUDGET_SCALE (properties/prop.cc).
constexpr double kCertifyBudgetFactor = 4.0;
double budgetScale(double scale);

// The fixed RapidCheck seed of a property: a hash of (base, id) below 2^32 (readable, JSON-safe).
uint64_t propertySeed(uint64_t base, std::string const& propertyId);

// RC_PARAMS for one child: "max_success=N seed=S" (no max_success when cases is nullopt).
std::string rcParams(std::optional<int64_t> cases, uint64_t seed);

// ---- parsers of child outputs -----------------------------------------------------------------------

// gtest --gtest_list_tests output -> "Suite.Name" ids in order (parameter comments dropped).
std::vector<std::string> parseGtestList(std::string const& out);

// RapidCheck's "Falsifiable after N tests" -> N (cases run until the failure), nullopt when absent.
std::optional<int64_t> parseFalsifiableAfter(std::string const& message);

// Every test of a gtest --gtest_output=json file that ran: id "Suite.Name", status PASS | FAIL | SKIPPED, failures.
struct GtestTest {
    std::string id;
    std::string status;
    std::vector<std::string> failures;
};
std::vector<GtestTest> parseGtestJsonAll(std::string const& json);

// "QSA_CHECK_FAILED <id> level=L profile=P ..." lines (properties, fixture replay) -> (id, level, profile).
struct FailedCheck {
    std::string id, level, profile;
};
std::vector<FailedCheck> parseFailedChecks(std::string const& text);
// "QSA_NOT_JUDGED ..." and "QSA_COVERAGE ..." lines of a child's output, in order, deduplicated.
std::vector<std::string> linesStartingWith(std::string const& text, std::string const& prefix);
// "QSA_FAST <id> judged_elements=<n> unjudged_elements=<n> judged_rows=<n> ambiguous_rows=<n> eps_r=<e>": what
// one profile-fast check judged (contract section 9.2). nullopt when the line is not one (a field missing or not
// a non-negative integer, no id); fields in any order, others ignored.
struct FastJudged {
    std::string id;
    int64_t judgedElements = 0, unjudgedElements = 0, judgedRows = 0, ambiguousRows = 0;
    std::string epsR;
};
std::optional<FastJudged> parseFastLine(std::string const& line);
// 950 -> "950", 12345 -> "12.3k", 1200000 -> "1.2M", 3400000000 -> "3.4G".
std::string shortCount(int64_t n);
// "QSA_SEED <id> base=B shard=i/N seed=S cases=M of T ..." -> M (cases the property ran), nullopt when absent.
std::optional<int64_t> parseSeedLineCases(std::string const& text, std::string const& propertyId);

// A "progress DONE TOTAL" line of exhaustive_primitives -> (done, total).
std::optional<std::pair<uint64_t, uint64_t>> parseProgressLine(std::string const& line);

// Where the git commit comes from, in order: env QSA_GIT_COMMIT, the bundle's COMMIT file, `git rev-parse HEAD`.
struct CommitSource {
    std::string commit; // "unknown" when none
    std::string source; // env | bundle | git | unknown
};
CommitSource chooseCommit(std::optional<std::string> env, std::optional<std::string> bundleFile,
                          std::optional<std::string> gitOutput);

// ---- progress ----------------------------------------------------------------------------------------

std::string formatDuration(double seconds); // "42s", "3m05s", "1h02m"
std::string formatCount(double n);          // "950", "12.3k", "4.29G"

struct ProgressSnapshot {
    double elapsed = 0;
    int64_t casesDone = 0, casesTotal = 0;          // property cases (planned budgets of finished properties)
    int jobsDone = 0, jobsTotal = 0;                // child processes
    double exhaustiveDone = 0, exhaustiveTotal = 0; // inputs, all GPUs together
    int failures = 0;
};
// Fraction of the work done: property cases and exhaustive inputs weighted by their expected share of time.
double workFraction(ProgressSnapshot const& s);
// One progress line: a bar of `barWidth` characters (none when 0), cases, rate, exhaustive inputs, ETA.
std::string formatProgress(ProgressSnapshot const& s, int barWidth);

// ---- arguments -----------------------------------------------------------------------------------------

struct Options {
    std::string outDir;                   // certificate directory
    double scale = 1.0;                   // multiplies every property budget
    uint64_t seed = 20261129;             // base seed of every property seed
    int jobsPerGpu = 0;                   // concurrent children per GPU (0: from the core count)
    std::vector<int> gpus;                // certify's visible indices to certify (empty: all)
    std::vector<int> only;                // contract numbers to run (empty: all)
    std::map<std::string, int64_t> cases; // per-property overrides "Suite.Name=N"
    bool exhaustive = true;
    bool properties = true;
    bool allowPtxJit = false;
    std::string progress = "auto"; // auto | bar | lines | none
    std::string binDir;            // directory holding properties/<test> and tools/exhaustive_primitives
    int exhaustiveThreads = 0;     // CPU threads per exhaustive child (0: cores / GPUs)
    double childTimeout = 3600;    // seconds, per child
    double timeLimitMinutes = 0;   // no new child after this many minutes (0: none); the rest FAIL as not run
    bool replayFixtures = true;    // the fixture replay (fixtures/replay_gpu_test) on every GPU
    bool stageTests = true;        // this project's kernel stage tests, when //api:impl is //kernels:qsa_kernels
    bool list = false;             // print the plan and exit
    bool cpuDryRun = false;        // testing certify itself: CPU property variants, no CUDA, fake GPUs
    int fakeGpus = 1;              // GPUs pretended by --cpu-dry-run
    int fakeSm = 90;               // their SM (major*10+minor), to test the SASS refusal without a GPU
    std::string implLib;           // --impl-lib: the shared library under test (the kit's build, //api:loaded)
    sanitize::Options sanitize;    // --sanitizers=..., --no-sanitizers, --sanitize-jobs=N
};
// Parses certify's command line (argv[0] included). `defaultOutDir` is used when --out is absent.
// Throws std::runtime_error with the usage on bad arguments; returns nullopt after --help (usage printed).
std::optional<Options> parseArgs(int argc, char const* const* argv, std::string const& defaultOutDir);

// ---- verdicts and rendering ------------------------------------------------------------------------------

// Fills every "verdict" of a certificate from its leaves (property verdicts, exhaustive check mismatches, child
// errors, suites): PASS only when everything judged passed and nothing is missing. A property or test whose check
// QSA_LEVELS / QSA_PROFILE did not select has verdict NOT_JUDGED and never counts as a pass.
// Every check (a property, a registered test, the exhaustive checks; once per GPU) is counted once, under its
// level (contract section 8) and inside it under its profile (Certify.SassCarried and a suite that did not run
// count only when they fail): cert["levels"]["core" | "hardened"] holds the level's verdict (PASS, FAIL, NOT JUDGED
// when QSA_LEVELS left it out, NONE RUN when no check of it was judged), its checks judged / passed / failed, per
// profile (none, ieee, fast) the same with the failing and not
// judged checks by name, and the sums of its fast checks' QSA_FAST lines. A judged fast check that passed without
// its QSA_FAST line FAILS (section 9.2: a fast check reports what it judged, so it never passes vacuously), and so
// does a level whose fast checks judged no element at all. The fixture replay's tests (each several checks) count
// the checks they fail under their levels; the tests themselves in cert["fixture_replay"]. cert["summary"]: lines,
//   certified: core (profiles none, fast); not certified: hardened (14 checks fail)
//   core: PASS (profile none 40/40, fast 8/8 checks, 436.2M elements judged at eps_r 2^-21; ieee not judged)
//   hardened: FAIL (14 checks: 10 profile none, 4 fast; ieee not judged)
//   fixture replay: 33/33 fixture tests pass
// the first also as cert["certified_line"] and the certified levels as cert["certified"]: a level is certified
// only when it was selected, judged at least one check and every check of it passed.
void computeVerdicts(nlohmann::json& cert);

// certificate.json text: sorted keys, 2-space indent, trailing newline.
std::string renderJson(nlohmann::json const& cert);
// certificate.md: a reviewer's one-page summary of the same content.
std::string renderMarkdown(nlohmann::json const& cert);

} // namespace certify
} // namespace qsa

// certify (//tools:certify, certify_main.cc): its child processes (certify_child.cc, through tools/engine.sh),
// where the binaries are (--bin-dir, runfiles, the GPU bundle), which GPUs are certified and what runs on each
// (certify_plan.cc); then its run: the job queues, workers and progress display, one child per job and its JSON
// result (certify_schedule.cc), the certificate (certify_report.cc).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/levels.h"
#include "tools/certify_core.h"
#include "tools/certify_cuda.h"

namespace qsa {
namespace certify {

// ---- child processes (certify_child.cc) ---------------------------------------------------------------------
// One child, launched, timed out and read by tools/engine.sh as a command (`bash engine.sh run ...`, the launcher
// run_all.sh and run_mutants.sh source): as `bazel test` runs a test (its runfiles, a fresh TEST_TMPDIR, the
// undeclared-outputs directory beside its log), pinned to a GPU through its environment, its output written to a
// log that certify reads as it grows (lines to a callback), killed with its process group after a timeout, and
// judged pass / fail / timeout / crash(SIGNAME) as the engine says.

struct ChildSpec {
    std::filesystem::path engine; // tools/engine.sh (Layout::engine)
    std::string exe;
    std::vector<std::string> args;          // argv[1..]
    std::map<std::string, std::string> env; // set (or override) these
    std::string runfiles;                   // the child's runfiles tree ("": it runs in a fresh directory)
    std::string declaredEnvFile;            // a bundle's ENV file: the child's declared env (set last), or ""
    std::string declaredEnvPath;            // the child's bundle path in it, e.g. "properties/layout_test_gpu"
    std::string logPath;                    // "": a temporary log, removed afterwards (outputs: <log>.outputs)
    double timeoutSeconds = 3600;
};

struct ChildResult {
    int exitCode = -1; // valid when !signaled && !timedOut && started
    int signal = 0;
    bool started = false;
    bool timedOut = false;
    std::string outcome; // the engine's verdict: pass | fail | timeout | crash(SIGNAME); "" when it gave none
    std::string output;  // everything the child printed (stdout and stderr, interleaved)
    std::string error;   // why it did not start
    bool ok() const { return started && !timedOut && signal == 0 && exitCode == 0; }
    std::string describe() const; // "exit 0", "exit 1", "killed by signal 11 (...)", "timed out after ...", ...
};

// Runs the child to completion, with certify's environment less the variables of a `bazel test` / bundle run that
// must not leak into a child. onLine gets every complete output line (without its newline).
ChildResult runChild(ChildSpec const& spec, std::function<void(std::string const&)> const& onLine);

// ---- the environment and the file system --------------------------------------------------------------

// The value of environment variable `name`, `fallback` when unset or empty.
std::string envOr(char const* name, std::string const& fallback);
// A whole file, nullopt when it cannot be opened.
std::optional<std::string> readFile(std::filesystem::path const& p);

// ---- where things are --------------------------------------------------------------------------------

struct Layout {
    std::filesystem::path exe;          // this binary
    std::filesystem::path runfilesRoot; // <...>.runfiles (holds qsa_indexer/)
    std::filesystem::path bundleRoot;   // GPU bundle root (MANIFEST + COMMIT), empty when not in a bundle
    std::string binDir;                 // --bin-dir
    std::filesystem::path engine;       // tools/engine.sh: --bin-dir/tools, runfiles or the bundle root; empty: none
};
Layout findLayout(char const* argv0, std::string const& binDir);

// A binary by its workspace-relative path (e.g. "properties/layout_test_gpu"); empty when nowhere.
std::filesystem::path locate(Layout const& l, std::string const& rel);

// How the engine launches a child binary `exe` (workspace-relative `rel`) with `args`, pinned to the GPU `visibleId`
// (CUDA_VISIBLE_DEVICES) and killed after `timeoutSeconds`: the engine, the runfiles (its own next to it, else
// certify's) and, in a bundle, its declared env (the bundle's ENV file).
ChildSpec launchSpec(Layout const& l, std::filesystem::path const& exe, std::string const& rel,
                     std::string const& visibleId, std::vector<std::string> args, double timeoutSeconds);

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
    std::filesystem::path exe;
    std::vector<std::string> args;
};

struct ContractPlan {
    ContractSpec spec;
    std::string rel; // workspace-relative binary path
    std::filesystem::path exe;
    std::vector<PropertyPlan> properties;
};

// The GPUs to certify (--gpus; fakes in a CPU dry run) and the SASS check (contract: the certified code is the
// compiled SASS, not a JIT of the PTX). 0, or certify's exit code.
int selectGpus(Options const& o, std::string const& sass, std::vector<GpuInfo>& gpus);

// The plan: every property of every selected contract (listed by its binary on the first GPU), with its budget
// and seed. 0, or certify's exit code (2 also when tools/engine.sh, which launches every child, is nowhere).
int planProperties(Options const& o, Layout const& layout, std::string const& visibleId, checks::Selection const& sel,
                   std::vector<ContractPlan>& plan);

// Whole binaries: the fixture replay through //api:impl; this project's stage properties and kernel stage tests
// when //api:impl is //kernels:qsa_kernels (they test its launchers, not the public API). Returns the line that
// names the stage tests run, or why none.
std::string planSuites(Options const& o, Layout const& layout, bool ownKernels, std::string const& implLabel,
                       std::vector<SuitePlan>& suites);

// Everything certify decides before the first child runs; certify_main.cc fills it in this order.
struct Plan {
    checks::Selection sel;               // what is judged: QSA_LEVELS / QSA_PROFILE (contract section 8)
    std::string implLabel;               // //api:impl of this build (api/impl_label.h)
    nlohmann::json implLibrary;          // the kit: the library's identity and check (null when linked in)
    bool ownKernels = false;             // //api:impl is //kernels:qsa_kernels: the stage tests run too
    Layout layout;                       // findLayout()
    std::filesystem::path outDir;        // --out, absolute
    std::string sass;                    // compiledSassArchs(), e.g. "80,90"
    std::vector<GpuInfo> gpus;           // selectGpus()
    std::vector<ContractPlan> contracts; // planProperties()
    std::vector<SuitePlan> suites;       // planSuites()
    std::string stageLine;               // planSuites()
    int jobsPerGpu = 1;                  // --jobs-per-gpu, else from the core count
    int exThreads = 1;                   // --exhaustive-threads, else cores / GPUs
    bool exhaustiveJudged = false;       // the registry's Exhaustive.* row is selected
};

// --list: the plan on stdout (implementation, selection, every property with its RC_PARAMS, the suites, the
// exhaustive binary, the GPUs and jobs).
void printPlan(Options const& o, Plan const& plan);

// ---- the run ---------------------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t);

// ---- shared progress state -------------------------------------------------------------------------------

struct Progress {
    std::mutex m;
    ProgressSnapshot s;
    std::vector<double> exhaustiveDone; // per GPU
    Clock::time_point start = Clock::now();
    std::string mode; // bar | lines | none
    bool barShown = false;
    Clock::time_point lastLine = Clock::now();

    // A job finished: counts it (and its planned cases), a failure when `failed`.
    void jobDone(bool failed, int64_t cases = 0);
    // An event line (a job finished); in bar mode printed above the bar.
    void event(std::string const& line);
    // Redraws the bar, or prints a progress line; m held.
    void drawLocked();
    // Every half second: the bar, or a line every 30 s.
    void tick();
    // After the last job: the final bar and a newline.
    void finish();
};

// The display mode (--progress; auto: a bar on a terminal, else lines) and the totals of the plan on every GPU.
void startProgress(Progress& progress, Options const& o, Plan const& plan);

// ---- results -------------------------------------------------------------------------------------------------

struct GpuRun {
    GpuInfo gpu;
    std::filesystem::path dir;
    nlohmann::json exhaustive;                        // filled by the exhaustive job
    std::map<std::string, nlohmann::json> properties; // id -> result
    std::map<std::string, nlohmann::json> suites;     // binary -> result
};

// A fresh output tree (only the parts certify owns): outDir/gpu<index>/logs for every GPU of the plan.
std::vector<GpuRun> prepareRuns(Plan const& plan);

// Runs every job of the plan on every GPU and fills `runs`. A property not judged is never run: its
// QSA_NOT_JUDGED line is printed and it is recorded NOT_JUDGED; a suite whose binary is missing is recorded
// with its error.
void runJobs(Options const& o, Plan const& plan, std::vector<GpuRun>& runs, Progress& progress);

// ---- the certificate (certify_report.cc): the results with the build, CUDA runtime and driver, git commit and
// budget, the verdicts (certify_core.h computeVerdicts) and the compute-sanitizer part (certify_sanitize.h).

// "2026-12-01T21:16:42Z": now, UTC.
std::string utcNow();

// Builds the certificate of `runs` (started at `started` / `start`), runs the sanitizer part (not in a CPU dry
// run), writes plan.outDir/certificate.json and certificate.md and prints the stage-tests line and the verdict.
// Returns certify's exit code: 0 PASS, 1 FAIL.
int writeCertificate(Options const& o, Plan const& plan, std::vector<GpuRun>& runs, std::string const& started,
                     Clock::time_point start);

} // namespace certify
} // namespace qsa

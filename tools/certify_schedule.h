// certify's run (//tools:certify), after the plan: the job queues, workers and progress display, one child per
// job and its JSON result (certify_schedule.cc), the certificate (certify_report.cc).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "checks/levels.h"
#include "tools/certify_core.h"
#include "tools/certify_plan.h"
#include "tools/certify_sanitize.h"

namespace qsa {
namespace certify {

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

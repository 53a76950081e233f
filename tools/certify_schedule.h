// certify's schedule (//tools:certify): one queue of jobs per GPU (the exhaustive scalar checks first, then every
// judged property, then the whole binaries), drained by --jobs-per-gpu worker threads; --time-limit (a job not
// started in time is a FAIL, never a skip); the progress display shared by the workers (bar, lines or none); and
// each GPU's results, the leaves of the certificate (certify_report.h). The jobs themselves: certify_jobs.h.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tools/certify_core.h"
#include "tools/certify_plan.h"

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

} // namespace certify
} // namespace qsa

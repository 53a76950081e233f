// certify's schedule (certify_schedule.h): the progress display, the output tree, the job queues and their
// worker threads, and the jobs --time-limit leaves unrun.
#include "tools/certify_schedule.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <thread>

namespace qsa {
namespace certify {

namespace fs = std::filesystem;
using nlohmann::json;

double secondsSince(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// ---- shared progress state -------------------------------------------------------------------------------

void Progress::jobDone(bool failed, int64_t cases) {
    std::lock_guard<std::mutex> g(m);
    s.casesDone += cases;
    s.jobsDone += 1;
    s.failures += failed ? 1 : 0;
}

void Progress::event(std::string const& line) {
    std::lock_guard<std::mutex> g(m);
    if (mode == "none") {
        return;
    }
    if (mode == "bar" && barShown) {
        std::printf("\r\033[K");
    }
    std::printf("%s\n", line.c_str());
    if (mode == "bar") {
        drawLocked();
    }
    std::fflush(stdout);
}

void Progress::drawLocked() {
    s.elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    s.exhaustiveDone = 0;
    for (double d : exhaustiveDone) {
        s.exhaustiveDone += d;
    }
    if (mode == "bar") {
        std::printf("\r\033[K%s", formatProgress(s, 30).c_str());
        barShown = true;
    } else if (mode == "lines") {
        std::printf("%s\n", formatProgress(s, 0).c_str());
    }
    std::fflush(stdout);
}

void Progress::tick() {
    std::lock_guard<std::mutex> g(m);
    if (mode == "bar") {
        drawLocked();
    } else if (mode == "lines" && Clock::now() - lastLine > std::chrono::seconds(30)) {
        lastLine = Clock::now();
        drawLocked();
    }
}

void Progress::finish() {
    std::lock_guard<std::mutex> g(m);
    if (mode != "none") {
        if (mode == "bar") {
            drawLocked();
        }
        std::printf("\n");
        std::fflush(stdout);
    }
}

void startProgress(Progress& progress, Options const& o, Plan const& plan) {
    std::string mode = o.progress;
    if (mode == "auto") {
        mode = isatty(STDOUT_FILENO) ? "bar" : "lines";
    }
    progress.mode = mode;
    progress.exhaustiveDone.assign(plan.gpus.size(), 0.0);
    for (ContractPlan const& c : plan.contracts) {
        for (PropertyPlan const& p : c.properties) {
            progress.s.casesTotal += p.cases.value_or(0) * static_cast<int64_t>(plan.gpus.size());
            progress.s.jobsTotal += p.judged ? static_cast<int>(plan.gpus.size()) : 0;
        }
    }
    progress.s.jobsTotal += static_cast<int>(plan.suites.size() * plan.gpus.size());
    if (o.exhaustive) {
        progress.s.jobsTotal += static_cast<int>(plan.gpus.size());
        progress.s.exhaustiveTotal =
            static_cast<double>(plan.gpus.size()) * ((o.cpuDryRun ? 65536.0 : 4294967296.0) + 131072.0);
    }
}

// ---- results -------------------------------------------------------------------------------------------------

json propertyStub(PropertyPlan const& p, char const* verdict) {
    // An unregistered property (its child fails it) is recorded at level "unregistered", as computeVerdicts
    // records one without a level.
    return {{"id", p.id},
            {"seed", p.seed},
            {"level", p.info.registered() ? p.info.level : "unregistered"},
            {"profile", p.info.registered() ? p.info.profile : "unregistered"},
            {"rc_params", rcParams(p.cases, p.seed)},
            {"verdict", verdict},
            {"seconds", 0.0},
            {"failures", json::array()},
            {"fixtures", json::array()}};
}

std::vector<GpuRun> prepareRuns(Plan const& plan) {
    fs::create_directories(plan.outDir);
    std::vector<GpuRun> runs(plan.gpus.size());
    for (size_t i = 0; i < plan.gpus.size(); ++i) {
        runs[i].gpu = plan.gpus[i];
        runs[i].dir = plan.outDir / ("gpu" + std::to_string(plan.gpus[i].index));
        fs::remove_all(runs[i].dir);
        fs::create_directories(runs[i].dir / "logs");
    }
    return runs;
}

namespace {

// One child to run on one GPU: a property, a whole binary (suite) or the exhaustive checks.
struct Job {
    size_t gpu;
    ContractPlan const* contract;
    PropertyPlan const* property; // null (and suite null): the exhaustive checks
    SuitePlan const* suite = nullptr;
};

// A suite's result without its child: `error` says why.
json suiteStub(SuitePlan const& s, std::string const& error) {
    return {{"name", s.name}, {"binary", s.rel}, {"tests", json::array()}, {"error", error}};
}

// Where a job's result goes in its GPU's results.
json& resultOf(Job const& job, GpuRun& run) {
    return job.suite != nullptr      ? run.suites[job.suite->rel]
           : job.property != nullptr ? run.properties[job.property->id]
                                     : run.exhaustive;
}

// A job not run (--time-limit reached): recorded as a failure (a certificate never passes on work it skipped).
json notRunResult(Job const& job) {
    std::string const why = "not run: --time-limit reached";
    if (job.suite != nullptr) {
        return suiteStub(*job.suite, why);
    }
    if (job.property == nullptr) {
        return {{"verdict", "FAIL"}, {"error", why}};
    }
    PropertyPlan const& p = *job.property;
    json r = propertyStub(p, "FAIL");
    r.update({{"cases_planned", p.cases ? json(*p.cases) : json()},
              {"cases_run", 0},
              {"exit", "not run"},
              {"failures", json::array({why})}});
    return r;
}

} // namespace

void runJobs(Options const& o, Plan const& plan, std::vector<GpuRun>& runs, Progress& progress) {
    // A queue of jobs per GPU, `jobsPerGpu` threads draining each: the exhaustive checks first, then properties.
    std::vector<std::deque<Job>> queues(plan.gpus.size());
    for (size_t i = 0; i < plan.gpus.size(); ++i) {
        if (o.exhaustive && plan.exhaustiveJudged) {
            queues[i].push_back({i, nullptr, nullptr});
        }
        for (ContractPlan const& c : plan.contracts) {
            for (PropertyPlan const& p : c.properties) {
                if (p.judged) {
                    queues[i].push_back({i, &c, &p});
                    continue;
                }
                // Not selected: never run, never a pass.
                std::printf("%s\n", checks::notJudgedLine(p.info, plan.sel).c_str());
                runs[i].properties[p.id] = propertyStub(p, "NOT_JUDGED");
            }
        }
        for (SuitePlan const& s : plan.suites) {
            if (s.exe.empty()) {
                runs[i].suites[s.rel] = suiteStub(s, s.rel + " not found (runfiles, bundle or --bin-dir)");
                continue;
            }
            queues[i].push_back({i, nullptr, nullptr, &s});
        }
    }
    std::mutex qm;
    std::mutex resultsMutex;
    std::atomic<bool> allDone{false};
    std::thread ticker([&] {
        while (!allDone.load()) {
            progress.tick();
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
    });
    std::vector<std::thread> workers;
    for (size_t i = 0; i < plan.gpus.size(); ++i) {
        for (int w = 0; w < plan.jobsPerGpu; ++w) {
            workers.emplace_back([&, i] {
                for (;;) {
                    Job job;
                    {
                        std::lock_guard<std::mutex> g(qm);
                        if (queues[i].empty()) {
                            return;
                        }
                        job = queues[i].front();
                        queues[i].pop_front();
                    }
                    json r;
                    if (o.timeLimitMinutes > 0 && secondsSince(progress.start) > o.timeLimitMinutes * 60) {
                        progress.jobDone(true);
                        r = notRunResult(job);
                    } else if (job.suite != nullptr) {
                        r = runSuite(plan.layout, *job.suite, runs[i], o, plan.sel, progress);
                    } else if (job.property == nullptr) {
                        r = runExhaustive(plan.layout, runs[i], o, plan.exThreads, progress, i);
                    } else {
                        r = runProperty(plan.layout, *job.contract, *job.property, runs[i], o, progress);
                    }
                    std::lock_guard<std::mutex> g(resultsMutex);
                    resultOf(job, runs[i]) = std::move(r);
                }
            });
        }
    }
    for (std::thread& t : workers) {
        t.join();
    }
    allDone = true;
    ticker.join();
    progress.finish();
}

} // namespace certify
} // namespace qsa

// certify: one command that certifies every visible GPU against the contract and writes a certificate.
//   bazel run //tools:certify -- [--scale F] [--out DIR] [--allow-ptx-jit] ...     (--help lists everything)
//   [--//api:impl=//their:lib]  certifies another implementation; QSA_LEVELS / QSA_PROFILE select what is judged
// For each GPU a worker pool runs, pinned with CUDA_VISIBLE_DEVICES, the whole portable suite: the exhaustive
// scalar checks, every property of every contract (one child per property, RC_PARAMS="seed=S" with fixed seeds,
// QSA_BUDGET_SCALE = one factor for every budget) and the fixture replay; when //api:impl is //kernels:qsa_kernels
// also this project's stage properties and kernel stage tests. certificate.json / certificate.md give a verdict
// per level and profile (contract section 8). Exit 0 PASS, 1 FAIL, 2 setup error, 3 refused (no SASS for a GPU).
// The parts: certify_plan.h (children, binaries, GPUs, what runs; queues, workers, progress, jobs, the
// certificate), certify_core.h (pure: contract list, budgets, parsers, verdicts, rendering), certify_sanitize.h
// (the compute-sanitizer part), certify_cuda.h (the CUDA side).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/impl_choice.h"
#include "api/impl_label.h"
#include "api/library_identity.h"
#include "checks/levels.h"
#include "tools/certify_plan.h"

namespace fs = std::filesystem;
using namespace qsa::certify;

namespace {

namespace checks = qsa::checks;

int realMain(int argc, char** argv) {
    std::string const defaultOut =
        (fs::path(envOr("BUILD_WORKING_DIRECTORY", fs::current_path().string())) / "certificate").string();
    std::optional<Options> const parsed = parseArgs(argc, argv, defaultOut);
    if (!parsed) {
        return 0;
    }
    Options const o = *parsed;
    Plan plan;
    // What is judged (contract section 8): QSA_LEVELS / QSA_PROFILE, passed on to every child.
    plan.sel = checks::selectionFromEnv();
    plan.implLabel = qsa::api::kImplLabel;
    // The kit (//api:loaded): the library is checked before this process makes its first CUDA call (the check
    // forks), and every child inherits QSA_IMPL_LIB.
    qsa::api::ImplChoice const impl = qsa::api::chooseImpl(o.implLib);
    if (!impl.error.empty()) {
        std::fprintf(stderr, "certify: %s\n", impl.error.c_str());
        return 2;
    }
    if (!impl.library.empty()) {
        plan.implLibrary = qsa::api::identityJson(qsa::api::identifyLibrary(impl.library));
        plan.implLibrary["check"] = impl.check;
        std::printf("certify: library %s (sha256 %s): %s\n", impl.library.c_str(),
                    plan.implLibrary.value("sha256", "").c_str(), impl.check.c_str());
    }
    std::string const& implLabel = plan.implLabel;
    plan.ownKernels =
        implLabel.size() >= 21 && implLabel.compare(implLabel.size() - 21, 21, "//kernels:qsa_kernels") == 0;
    plan.layout = findLayout(argv[0], o.binDir);
    plan.outDir = fs::absolute(o.outDir);

    plan.sass = compiledSassArchs();
    if (int const rc = selectGpus(o, plan.sass, plan.gpus)) {
        return rc;
    }
    if (int const rc = planProperties(o, plan.layout, plan.gpus[0].visibleId, plan.sel, plan.contracts)) {
        return rc;
    }
    plan.stageLine = planSuites(o, plan.layout, plan.ownKernels, implLabel, plan.suites);
    unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
    size_t const gpuCount = plan.gpus.size();
    plan.jobsPerGpu = o.jobsPerGpu > 0 ? o.jobsPerGpu : std::clamp(static_cast<int>(cores / (4 * gpuCount)), 1, 4);
    plan.exThreads = o.exhaustiveThreads > 0 ? o.exhaustiveThreads : std::max(1, static_cast<int>(cores / gpuCount));
    if (o.list) {
        printPlan(o, plan);
        return 0;
    }

    std::vector<GpuRun> runs = prepareRuns(plan);
    Progress progress;
    startProgress(progress, o, plan);
    std::printf("certify: %zu GPU(s), %d contract(s), %d jobs per GPU, output %s\n", gpuCount,
                static_cast<int>(plan.contracts.size()), plan.jobsPerGpu, plan.outDir.c_str());
    for (GpuInfo const& g : plan.gpus) {
        std::printf("  gpu %d: %s, sm_%d%d, %s, CUDA_VISIBLE_DEVICES=%s\n", g.index, g.name.c_str(), g.major, g.minor,
                    g.uuid.c_str(), g.visibleId.c_str());
    }
    std::fflush(stdout);
    std::string const started = utcNow();

    plan.exhaustiveJudged = plan.sel.judged(checks::lookup("Exhaustive.Primitives"));
    runJobs(o, plan, runs, progress);
    return writeCertificate(o, plan, runs, started, progress.start);
}

} // namespace

int main(int argc, char** argv) {
    try {
        return realMain(argc, argv);
    } catch (std::exception const& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}

// certify's plan (certify_plan.h): finding the binaries, choosing the GPUs, listing every property of every
// selected contract through its own binary (--gtest_list_tests), the whole-binary suites, and --list.
#include "tools/certify_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace qsa {
namespace certify {

extern char const kKernelStageTests[]; // kernels/stage_tests.bzl, embedded by tools/BUILD

namespace fs = std::filesystem;

// ---- the environment and the file system --------------------------------------------------------------

std::string envOr(char const* name, std::string const& fallback) {
    char const* v = std::getenv(name);
    return v != nullptr && *v != 0 ? v : fallback;
}

std::optional<std::string> readFile(fs::path const& p) {
    std::ifstream f(p);
    if (!f) {
        return std::nullopt;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// ---- where things are --------------------------------------------------------------------------------

Layout findLayout(char const* argv0, std::string const& binDir) {
    Layout l;
    std::error_code ec;
    l.exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
        l.exe = fs::absolute(argv0);
    }
    l.binDir = binDir;
    std::vector<fs::path> candidates;
    for (char const* v : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
        if (std::getenv(v) != nullptr) {
            candidates.emplace_back(std::getenv(v));
        }
    }
    candidates.push_back(l.exe.string() + ".runfiles");
    candidates.push_back(fs::absolute(std::string(argv0) + ".runfiles"));
    fs::path const cwd = fs::current_path();
    if (cwd.filename() == "qsa_indexer") {
        candidates.push_back(cwd.parent_path()); // `bazel run` starts in <runfiles>/qsa_indexer
    }
    for (fs::path const& c : candidates) {
        if (fs::is_directory(c / "qsa_indexer", ec)) {
            l.runfilesRoot = c;
            break;
        }
    }
    // The bundle of tools/gpu_bundle.sh: <root>/tools/<pkg>/<name>, with <root>/MANIFEST and <root>/COMMIT.
    for (fs::path d = l.exe.parent_path(); !d.empty() && d != d.root_path(); d = d.parent_path()) {
        if (fs::exists(d / "MANIFEST", ec) && fs::exists(d / "COMMIT", ec)) {
            l.bundleRoot = d;
            break;
        }
    }
    // The launcher of every child (certify_child.cc): as a binary is found (locate), then at the bundle's root.
    std::vector<fs::path> engines;
    if (!binDir.empty())
        engines.push_back(fs::path(binDir) / "tools" / "engine.sh");
    if (!l.runfilesRoot.empty())
        engines.push_back(l.runfilesRoot / "qsa_indexer" / "tools" / "engine.sh");
    if (!l.bundleRoot.empty())
        engines.push_back(l.bundleRoot / "engine.sh");
    for (fs::path const& e : engines) {
        if (fs::is_regular_file(e, ec)) {
            l.engine = e;
            break;
        }
    }
    return l;
}

fs::path locate(Layout const& l, std::string const& rel) {
    std::vector<fs::path> c;
    if (!l.binDir.empty()) {
        c.push_back(fs::path(l.binDir) / rel);
    }
    if (!l.runfilesRoot.empty()) {
        c.push_back(l.runfilesRoot / "qsa_indexer" / rel);
    }
    if (!l.bundleRoot.empty()) {
        c.push_back(l.bundleRoot / "tests" / rel);
        c.push_back(l.bundleRoot / "tools" / rel);
    }
    std::error_code ec;
    for (fs::path const& p : c) {
        if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) {
            return p;
        }
    }
    return {};
}

ChildSpec launchSpec(Layout const& l, fs::path const& exe, std::string const& rel, std::string const& visibleId,
                     std::vector<std::string> args, double timeoutSeconds) {
    ChildSpec spec;
    spec.engine = l.engine;
    spec.exe = exe.string();
    spec.args = std::move(args);
    spec.env = {{"CUDA_VISIBLE_DEVICES", visibleId}};
    spec.timeoutSeconds = timeoutSeconds;
    std::error_code ec;
    fs::path root = exe.string() + ".runfiles";
    if (!fs::is_directory(root / "qsa_indexer", ec)) {
        root = l.runfilesRoot;
    }
    spec.runfiles = root.string(); // the engine sets TEST_SRCDIR, RUNFILES_DIR, TEST_WORKSPACE and the cwd
    if (!l.bundleRoot.empty() && fs::is_regular_file(l.bundleRoot / "ENV", ec)) {
        spec.declaredEnvFile = (l.bundleRoot / "ENV").string();
        spec.declaredEnvPath = rel;
    }
    return spec;
}

// ---- the plan -----------------------------------------------------------------------------------------

int selectGpus(Options const& o, std::string const& sass, std::vector<GpuInfo>& gpus) {
    std::vector<GpuInfo> all;
    if (o.cpuDryRun) {
        for (int i = 0; i < o.fakeGpus; ++i) {
            GpuInfo g;
            g.index = i;
            g.name = "CPU dry run (no GPU)";
            g.uuid = "FAKE-" + std::to_string(i);
            g.pciBusId = "none";
            g.major = o.fakeSm / 10;
            g.minor = o.fakeSm % 10;
            all.push_back(g);
        }
    } else {
        all = queryGpus();
    }
    for (GpuInfo g : all) {
        if (o.gpus.empty() || std::find(o.gpus.begin(), o.gpus.end(), g.index) != o.gpus.end()) {
            g.visibleId = childVisibleDevices(std::getenv("CUDA_VISIBLE_DEVICES"), g.index);
            gpus.push_back(g);
        }
    }
    if (gpus.empty()) {
        std::fprintf(stderr, "certify: no GPU to certify (%zu visible, --gpus selects none)\n", all.size());
        return 2;
    }
    bool refused = false;
    for (GpuInfo const& g : gpus) {
        SassDecision const d = sassFor(sass, g.major, g.minor);
        if (!d.carried) {
            std::fprintf(stderr, "certify: GPU %d (%s): %s.\n", g.index, g.name.c_str(), d.message.c_str());
            refused = true;
        }
    }
    if (refused && !o.allowPtxJit) {
        std::fprintf(stderr,
                     "certify: refusing to certify a build without SASS for the GPU: what runs would be the driver's "
                     "JIT of the PTX, not the compiled code. Rebuild with the GPU's architecture (e.g. "
                     "--config=all_archs) or pass --allow-ptx-jit to certify the JIT path (recorded in the "
                     "certificate).\n");
        return 3;
    }
    return 0;
}

int planProperties(Options const& o, Layout const& layout, std::string const& visibleId, checks::Selection const& sel,
                   std::vector<ContractPlan>& plan) {
    if (layout.engine.empty()) {
        std::fprintf(stderr,
                     "certify: tools/engine.sh (the launcher of every child) not found: not in --bin-dir '%s'/tools, "
                     "the runfiles '%s' or the bundle root '%s'\n",
                     o.binDir.c_str(), layout.runfilesRoot.c_str(), layout.bundleRoot.c_str());
        return 2;
    }
    if (o.properties) {
        for (ContractSpec const& c : contracts()) {
            if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.number) == o.only.end()) {
                continue;
            }
            ContractPlan cp{c, o.cpuDryRun ? "properties/" + c.test : c.gpuBinary, {}, {}};
            cp.exe = locate(layout, cp.rel);
            if (cp.exe.empty()) {
                std::fprintf(stderr, "certify: %s not found (runfiles %s, bundle %s, --bin-dir %s)\n", cp.rel.c_str(),
                             layout.runfilesRoot.c_str(), layout.bundleRoot.c_str(), o.binDir.c_str());
                return 2;
            }
            ChildResult const r = runChild(launchSpec(layout, cp.exe, cp.rel, visibleId, {"--gtest_list_tests"}, 120),
                                           [](auto const&) {});
            std::vector<std::string> const ids = parseGtestList(r.output);
            if (!r.ok() || ids.empty()) {
                std::fprintf(stderr, "certify: listing the properties of %s failed (%s):\n%s\n", cp.rel.c_str(),
                             r.describe().c_str(), r.output.c_str());
                return 2;
            }
            for (std::string const& id : ids) {
                auto const ov = o.cases.find(id);
                std::optional<int64_t> const cases =
                    ov != o.cases.end() ? std::optional<int64_t>(ov->second) : std::nullopt;
                checks::CheckInfo const info = checks::lookup(id);
                // An unregistered property fails in its child (properties/prop.cc): it is run, never skipped.
                bool const judged = !info.registered() || sel.judged(info);
                cp.properties.push_back({c.number, id, cases, propertySeed(o.seed, id), info, judged});
            }
            plan.push_back(cp);
        }
    }
    return 0;
}

std::string planSuites(Options const& o, Layout const& layout, bool ownKernels, std::string const& implLabel,
                       std::vector<SuitePlan>& suites) {
    if (o.replayFixtures) {
        suites.push_back({"fixture replay",
                          o.cpuDryRun ? "fixtures/replay_test" : "fixtures/replay_gpu_test",
                          {},
                          {o.cpuDryRun ? "--impl=reference" : "--impl=gpu"}});
    }
    std::string stageLine;
    if (!o.stageTests) {
        stageLine = "This project's kernel stage tests: not run (--no-stage-tests).";
    } else if (!ownKernels) {
        stageLine = "This project's kernel stage tests: not run (//api:impl is " + implLabel +
                    "; they test //kernels:qsa_kernels' own launchers).";
    } else if (o.cpuDryRun) {
        stageLine = "This project's kernel stage tests: not run (CPU dry run: they need a GPU).";
    } else {
        size_t const firstStage = suites.size();
        for (ContractSpec const& c : stageProperties()) {
            suites.push_back({"stage properties", c.gpuBinary, {}, {}});
        }
        std::istringstream names(kKernelStageTests);
        for (std::string n; std::getline(names, n);) {
            if (!n.empty()) {
                suites.push_back({"kernel stage tests", "kernels/" + n, {}, {}});
            }
        }
        stageLine = "Also ran this project's stage tests (//api:impl is //kernels:qsa_kernels):";
        for (size_t i = firstStage; i < suites.size(); ++i) {
            stageLine += " " + suites[i].rel;
        }
        stageLine += ".";
    }
    for (SuitePlan& s : suites) {
        s.exe = locate(layout, s.rel); // a missing binary is a FAIL of its suite (runJobs)
    }
    return stageLine;
}

void printPlan(Options const& o, Plan const& plan) {
    std::printf("implementation under test: %s; judged: %s; budget scale %g (QSA_BUDGET_SCALE)\n",
                plan.implLabel.c_str(), plan.sel.describe().c_str(), budgetScale(o.scale));
    for (ContractPlan const& c : plan.contracts) {
        std::printf("contract %d (%s): %s\n", c.spec.number, c.spec.name.c_str(), c.exe.c_str());
        for (PropertyPlan const& p : c.properties) {
            std::printf("  %-52s %s RC_PARAMS=\"%s\"%s\n", p.id.c_str(), checks::tags(p.info).c_str(),
                        rcParams(p.cases, p.seed).c_str(), p.judged ? "" : " NOT JUDGED");
        }
    }
    for (SuitePlan const& s : plan.suites) {
        std::printf("%s: %s\n", s.name.c_str(), s.exe.empty() ? ("MISSING " + s.rel).c_str() : s.exe.c_str());
    }
    std::printf("%s\n", plan.stageLine.c_str());
    std::printf("exhaustive: %s\n", o.exhaustive ? locate(plan.layout, "tools/exhaustive_primitives").c_str() : "off");
    std::printf("GPUs: %zu, %d jobs per GPU, %d exhaustive threads per GPU, out %s\n", plan.gpus.size(),
                plan.jobsPerGpu, plan.exThreads, plan.outDir.c_str());
}

} // namespace certify
} // namespace qsa

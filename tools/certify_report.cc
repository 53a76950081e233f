// certify's certificate (certify_plan.h): the JSON of one GPU and of the whole run, the versions and the commit
// it records, and the two files.
#include "tools/certify_plan.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

namespace qsa {
namespace certify {

using nlohmann::json;

std::string utcNow() {
    std::time_t const t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

namespace {

// The kernel module behind the driver (contract of a certificate: name the driver it was made with). Without
// /proc/driver/nvidia/version (no NVIDIA module, or a container without it) the release says why.
DriverModule driverModule() {
    std::optional<std::string> const v = readFile("/proc/driver/nvidia/version");
    if (!v)
        return {"unknown (/proc/driver/nvidia/version not readable)", ""};
    std::optional<DriverModule> const m = parseNvidiaDriverVersion(*v);
    if (!m)
        return {"unknown (no NVRM version line with a release in /proc/driver/nvidia/version)", ""};
    return *m;
}

// One GPU's part of the certificate: the device, its SASS decision, every property, suite and exhaustive result.
json gpuCertificate(GpuRun& run, Options const& o, Plan const& plan) {
    GpuInfo const& g = run.gpu;
    SassDecision const d = sassFor(plan.sass, g.major, g.minor);
    json gj = {{"index", g.index},
               {"cuda_visible_devices", g.visibleId},
               {"name", g.name},
               {"uuid", g.uuid},
               {"pci_bus_id", g.pciBusId},
               {"sm", std::to_string(g.major) + std::to_string(g.minor)},
               {"compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor)},
               {"sm_count", g.smCount},
               {"memory_bytes", g.totalMemBytes},
               {"sass",
                {{"carried", d.carried},
                 {"exact", d.exact},
                 {"cubin_arch", d.cubinArch},
                 {"message", d.message},
                 {"ptx_jit_allowed", o.allowPtxJit}}}};
    if (o.properties) {
        json cs = json::array();
        for (ContractPlan const& c : plan.contracts) {
            json props = json::array();
            double secs = 0;
            for (PropertyPlan const& p : c.properties) {
                json const& r = run.properties[p.id];
                secs += r.value("seconds", 0.0);
                props.push_back(r);
            }
            cs.push_back({{"number", c.spec.number},
                          {"name", c.spec.name},
                          {"binary", c.rel},
                          {"properties", props},
                          {"seconds", secs}});
        }
        gj["contracts"] = cs;
    }
    if (o.exhaustive && plan.exhaustiveJudged) {
        gj["exhaustive"] = run.exhaustive;
    } else if (o.exhaustive) {
        gj["exhaustive"] = {{"verdict", "NOT_JUDGED"}};
    }
    json coverage = json::array();
    auto addCoverage = [&](json const& r) {
        for (char const* key : {"coverage", "fast"}) // QSA_COVERAGE, then QSA_FAST (profile fast, section 9.2)
            for (auto const& l : r.value(key, json::array()))
                coverage.push_back(l);
    };
    for (auto const& [id, r] : run.properties)
        addCoverage(r);
    json sj = json::array();
    for (SuitePlan const& s : plan.suites) {
        addCoverage(run.suites[s.rel]);
        sj.push_back(run.suites[s.rel]);
    }
    gj["suites"] = sj;
    gj["coverage"] = coverage;
    gj["stage_tests_line"] = plan.stageLine;
    return gj;
}

// The whole certificate, its verdicts computed (the sanitizer part not yet in).
json certificateOf(Options const& o, Plan const& plan, std::vector<GpuRun>& runs, std::string const& started,
                   Clock::time_point start) {
    json cert;
    cert["format"] = "qsa-certificate/1";
    cert["dry_run"] = o.cpuDryRun;
    std::string head; // `git rev-parse HEAD`, used only when it exits 0
    char const* const ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    CommitSource const commit = chooseCommit(
        std::getenv("QSA_GIT_COMMIT") ? std::optional<std::string>(std::getenv("QSA_GIT_COMMIT")) : std::nullopt,
        plan.layout.bundleRoot.empty() ? std::nullopt : readFile(plan.layout.bundleRoot / "COMMIT"),
        ws && runCapture("git -C '" + std::string(ws) + "' rev-parse HEAD 2>/dev/null", head) == 0
            ? std::optional<std::string>(head)
            : std::nullopt);
    cert["git"] = {{"commit", commit.commit}, {"source", commit.source}};
    // A mutation-testing run (issue 8: --//kernels:enable_mutants=true and QSA_MUTANT=n) certifies a mutant, not
    // the production kernels: say so.
    std::string const mutant = envOr("QSA_MUTANT", "0");
    if (mutant != "0") {
        cert["qsa_mutant"] = mutant;
    }
    cert["build"] = {{"sass_archs", splitArchList(plan.sass)},
                     {"ptx_archs", splitArchList(compiledPtxArchs())},
                     {"cuda_toolkit_compiled", compiledCudartVersion()}};
    DriverModule const driver = driverModule();
    cert["cuda"] = {{"runtime_version", o.cpuDryRun ? 0 : runtimeVersion()},
                    {"driver_api_version", o.cpuDryRun ? 0 : driverApiVersion()},
                    {"driver_release", driver.release},
                    {"driver_module", driver.module}};
    json contractsSel = json::array();
    for (ContractPlan const& c : plan.contracts) {
        contractsSel.push_back(c.spec.number);
    }
    cert["budget"] = {{"scale", o.scale},
                      {"base_seed", o.seed},
                      {"properties", o.properties},
                      {"exhaustive", o.exhaustive},
                      {"contracts", contractsSel},
                      {"jobs_per_gpu", plan.jobsPerGpu},
                      {"time_limit_minutes", o.timeLimitMinutes},
                      {"budget_scale", budgetScale(o.scale)},
                      {"levels", join(plan.sel.levels, ",")}, // as checks::parseSelection reads them back
                      {"profile", plan.sel.profile},
                      {"impl", plan.implLabel}};
    // What was certified: the linked label, or (the kit) the library file itself, beside the GPU and driver.
    cert["implementation"] = {{"label", plan.implLabel}};
    if (!plan.implLibrary.is_null()) {
        cert["implementation"]["library"] = plan.implLibrary;
    }
    cert["gpus"] = json::array();
    for (GpuRun& run : runs) {
        cert["gpus"].push_back(gpuCertificate(run, o, plan));
    }
    cert["times"] = {{"started_utc", started}, {"total_seconds", secondsSince(start)}};
    computeVerdicts(cert);
    return cert;
}

} // namespace

int writeCertificate(Options const& o, Plan const& plan, std::vector<GpuRun>& runs, std::string const& started,
                     Clock::time_point start) {
    json cert = certificateOf(o, plan, runs, started, start);
    // compute-sanitizer part (tools/certify_sanitize.h): after the properties, so the GPU is free for it.
    cert["sanitizers"] = o.cpuDryRun ? sanitize::notRun("CPU dry run")
                                     : sanitize::run(o.sanitize, plan.layout.bundleRoot.string(),
                                                     (plan.outDir / "sanitizer_logs").string());
    sanitize::applyVerdict(cert);
    if (cert["sanitizers"].value("verdict", "") == "FAIL") { // the levels are the checks'; say what else failed
        cert["certified_line"] = cert["certified_line"].get<std::string>() + "; compute-sanitizer: FAIL";
        cert["summary"][0] = cert["certified_line"];
    }
    {
        std::ofstream(plan.outDir / "certificate.json") << renderJson(cert);
        std::ofstream(plan.outDir / "certificate.md") << renderMarkdown(cert) << sanitize::markdown(cert);
    }
    std::string const verdict = cert["verdict"];
    // The summary, its first line where the implementation is certified (certificate.md begins with it too).
    for (size_t i = 0; i < cert["summary"].size(); ++i)
        std::printf("%s%s\n", i == 0 ? "certify: " : "  ", cert["summary"][i].get<std::string>().c_str());
    std::printf("certify: %s\n", plan.stageLine.c_str());
    std::printf("certify: verdict %s%s (judged %s, impl %s)\n  %s\n  %s\n", verdict.c_str(),
                o.cpuDryRun ? " (CPU DRY RUN, not a certificate)" : "", plan.sel.describe().c_str(),
                plan.implLabel.c_str(), (plan.outDir / "certificate.json").c_str(),
                (plan.outDir / "certificate.md").c_str());
    return verdict == "PASS" ? 0 : 1;
}

} // namespace certify
} // namespace qsa

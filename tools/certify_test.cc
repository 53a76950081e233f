// CPU tests of certify's pure parts: SASS decision, plan (budgets, seeds), parsers, progress, arguments,
// verdicts, the deterministic rendering of the certificate, and the sanitizer part's parsers and verdict rules.
#include "tools/certify_core.h"
#include "tools/certify_sanitize.h"

#include <gtest/gtest.h>

#include <set>

using nlohmann::json;
using namespace qsa::certify;

namespace {

TEST(Sass, WhichCubinRunsOnWhichDevice) {
    struct Case {
        char const* sass;
        int major, minor;
        char const* cubin; // "" when no SASS is carried
    };
    for (Case const& c : std::vector<Case>{{"80,90", 9, 0, "90"},
                                           {"80,90", 8, 6, "80"}, // sm_80 cubin runs on 8.6
                                           {"80,86", 8, 9, "86"}, // the highest compatible one
                                           {"80,90", 10, 0, ""},  // Blackwell: only PTX 90 would JIT
                                           {"90", 8, 0, ""},      // a newer minor/major never runs on an older SM
                                           {"86", 8, 0, ""},
                                           {"", 9, 0, ""},
                                           {"90a", 9, 0, "90a"},
                                           {"100a", 10, 3, ""},        // arch-specific: exactly 10.0
                                           {"100f", 10, 3, "100f"}}) { // family: 10.x, x >= 0
        SassDecision const d = sassFor(c.sass, c.major, c.minor);
        std::string const where =
            std::string(c.sass) + " on " + std::to_string(c.major) + "." + std::to_string(c.minor);
        EXPECT_EQ(d.cubinArch, c.cubin) << where;
        EXPECT_EQ(d.carried, *c.cubin != 0) << where;
        EXPECT_EQ(d.exact, d.carried && std::stoi(c.cubin) == c.major * 10 + c.minor) << where;
    }
    EXPECT_NE(sassFor("80,90", 12, 0).message.find("no SASS for sm_120"), std::string::npos);
    EXPECT_THROW(splitArchList("80,sm_90"), std::runtime_error);
    EXPECT_THROW(splitArchList("9"), std::runtime_error);
    EXPECT_EQ(splitArchList(" 80, 90 ,"), (std::vector<std::string>{"80", "90"}));
}

TEST(Plan, ChildVisibleDevicesFollowsTheParentList) {
    EXPECT_EQ(childVisibleDevices(nullptr, 1), "1");
    EXPECT_EQ(childVisibleDevices("", 0), "0");
    EXPECT_EQ(childVisibleDevices("2,3", 1), "3");
    EXPECT_EQ(childVisibleDevices("GPU-aa, GPU-bb", 0), "GPU-aa");
    EXPECT_THROW(childVisibleDevices("2,3", 2), std::runtime_error);
}

TEST(Plan, EightContractsInOrder) {
    // The eight contracts of section 7 in order, then the portable decode stage property (contract 1).
    ASSERT_EQ(contracts().size(), 9u);
    EXPECT_EQ(contracts()[8].test, "decode_stages_test");
    EXPECT_EQ(contracts()[8].number, 1);
    for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(contracts()[i].number, static_cast<int>(i) + 1);
    }
    EXPECT_EQ(contracts()[0].test, "differential_test");
    EXPECT_EQ(contracts()[0].gpuBinary, "properties/differential_test_gpu");
    EXPECT_EQ(contracts()[7].test, "workspace_test");
    // The stage properties come from the same list (properties/contracts.bzl), GPU only.
    ASSERT_EQ(stageProperties().size(), 1u);
    EXPECT_EQ(stageProperties()[0].gpuBinary, "properties/differential_stages_test");
    EXPECT_EQ(stageProperties()[0].test, ""); // no CPU variant
}

TEST(Plan, OneBudgetFactor) {
    EXPECT_EQ(budgetScale(1.0), kCertifyBudgetFactor);
    EXPECT_EQ(budgetScale(0.5), kCertifyBudgetFactor / 2);
    EXPECT_EQ(rcParams(160, 42), "max_success=160 seed=42");
    EXPECT_EQ(rcParams(std::nullopt, 42), "seed=42");
}

TEST(Plan, SeedsAreFixedDistinctAndFollowTheBase) {
    std::set<uint64_t> seen;
    for (char const* id : {"A.B", "A.C", "Differential.PrefillMatchesReference", "Workspace.SizesFollowSection6"}) {
        uint64_t const s = propertySeed(20261129, id);
        EXPECT_EQ(s, propertySeed(20261129, id));
        EXPECT_LT(s, uint64_t(1) << 32);
        seen.insert(s);
    }
    EXPECT_EQ(seen.size(), 4u);
    EXPECT_NE(propertySeed(1, "A.B"), propertySeed(2, "A.B"));
    EXPECT_EQ(propertySeed(20261129, "A.B"), 1957147876u) << "seeds are part of the certificate: never change them";
}

TEST(Parsers, GtestList) {
    std::string const out = "Running main() from gtest_main.cc\nDifferential.\n  PrefillMatchesReference\n"
                            "  DecodeStepsMatchReference  # GetParam() = 3\nLayout.\n  PrefillRowsObeyK4\n";
    // The first line has no leading blank and no dot-suffix: it is a suite line with no tests under it.
    EXPECT_EQ(parseGtestList(out),
              (std::vector<std::string>{"Differential.PrefillMatchesReference",
                                        "Differential.DecodeStepsMatchReference", "Layout.PrefillRowsObeyK4"}));
}

TEST(Parsers, FalsifiableAfter) {
    EXPECT_EQ(parseFalsifiableAfter("Falsifiable after 17 tests and 5 shrinks\n..."), 17);
    EXPECT_EQ(parseFalsifiableAfter("Falsifiable after 1 test and 0 shrinks"), 1);
    EXPECT_FALSE(parseFalsifiableAfter("OK, passed 100 tests").has_value());
}

TEST(Parsers, NvidiaDriverVersionFromProc) {
    // The H200 host's line (open module, "for <arch>" before the release: the regex before this fix missed it).
    std::string const h200 = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
                             "(dvs-builder@U22-I3-AE18-09-4)  Thu Jan 23 10:00:00 UTC 2026\n"
                             "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
    std::optional<DriverModule> const m = parseNvidiaDriverVersion(h200);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->release, "580.159.04");
    EXPECT_EQ(m->module, "NVIDIA UNIX Open Kernel Module for x86_64 580.159.04 Release Build "
                         "(dvs-builder@U22-I3-AE18-09-4) Thu Jan 23 10:00:00 UTC 2026");
    // The proprietary module's form (arch before "Kernel Module"), and an aarch64 open module.
    auto release = [](std::string const& t) {
        std::optional<DriverModule> const r = parseNvidiaDriverVersion(t);
        return r ? r->release : std::string("none");
    };
    EXPECT_EQ(release("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"),
              "535.104.05");
    EXPECT_EQ(release("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release Build\n"),
              "570.86.15");
    EXPECT_EQ(release("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04"), "580.159.04");
    EXPECT_EQ(release(""), "none");
    EXPECT_EQ(release("GCC version:  gcc version 12.3.0\n"), "none");                        // no NVRM line
    EXPECT_EQ(release("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n"), "none"); // no release
}

TEST(Parsers, GtestJson) {
    std::string const j = R"({"testsuites":[{"name":"Padding","testsuite":[
        {"name":"A","status":"RUN","result":"COMPLETED"},
        {"name":"B","status":"RUN","result":"COMPLETED","failures":[{"failure":"Falsifiable after 3 tests","type":""}]},
        {"name":"C","status":"NOTRUN","result":"SUPPRESSED"},{"name":"D","status":"RUN","result":"SKIPPED"}]}]})";
    std::vector<GtestTest> const t = parseGtestJsonAll(j); // Padding.C: filtered out, never ran: not a result
    ASSERT_EQ(t.size(), 3u);
    EXPECT_EQ(t[0].id, "Padding.A");
    EXPECT_EQ(t[0].status, "PASS");
    EXPECT_EQ(t[1].status, "FAIL");
    EXPECT_EQ(t[1].failures, std::vector<std::string>{"Falsifiable after 3 tests"});
    EXPECT_EQ(t[2].id, "Padding.D");
    EXPECT_EQ(t[2].status, "SKIPPED"); // not a pass either
    EXPECT_TRUE(parseGtestJsonAll("not json").empty());
}

TEST(Parsers, ProgressLine) {
    auto p = parseProgressLine("progress 131072 4295098368");
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->first, 131072u);
    EXPECT_EQ(p->second, 4295098368u);
    EXPECT_FALSE(parseProgressLine("rsqrt_rn 4294967296 inputs 0 mismatches").has_value());
    EXPECT_FALSE(parseProgressLine("progress 5 4").has_value());
}

TEST(Parsers, CommitSourcesInOrder) {
    EXPECT_EQ(chooseCommit(std::string("abc\n"), std::string("def"), std::string("ghi")).source, "env");
    EXPECT_EQ(chooseCommit(std::nullopt, std::string("def\n"), std::string("ghi")).commit, "def");
    EXPECT_EQ(chooseCommit(std::string(""), std::string("unknown\n"), std::string("ghi\n")).commit, "ghi");
    CommitSource const none = chooseCommit(std::nullopt, std::nullopt, std::nullopt);
    EXPECT_EQ(none.commit, "unknown");
    EXPECT_EQ(none.source, "unknown");
}

TEST(Progress, Durations) {
    EXPECT_EQ(formatDuration(0), "0s");
    EXPECT_EQ(formatDuration(59.4), "59s");
    EXPECT_EQ(formatDuration(185), "3m05s");
    EXPECT_EQ(formatDuration(3725), "1h02m");
    EXPECT_EQ(formatDuration(-1), "--");
    EXPECT_EQ(formatCount(950), "950");
    EXPECT_EQ(formatCount(12345), "12.3k");
    EXPECT_EQ(formatCount(4294967296.0), "4.29G");
}

TEST(Progress, LineHasCasesRateAndEta) {
    ProgressSnapshot s;
    s.elapsed = 100;
    s.casesDone = 450;
    s.casesTotal = 1000;
    s.jobsDone = 5;
    s.jobsTotal = 10;
    s.exhaustiveTotal = 4294967296.0;
    s.exhaustiveDone = 4294967296.0; // exhaustive done: 0.1 + 0.9 * 0.45 = 0.505
    EXPECT_NEAR(workFraction(s), 0.505, 1e-9);
    std::string const line = formatProgress(s, 20);
    EXPECT_EQ(line.substr(0, 22), "[##########..........]");
    EXPECT_NE(line.find(" 50%"), std::string::npos) << line;
    EXPECT_NE(line.find("cases 450/1000 (4.5/s)"), std::string::npos) << line;
    EXPECT_NE(line.find("exhaustive 4.29G/4.29G"), std::string::npos) << line;
    EXPECT_NE(line.find("ETA 1m38s"), std::string::npos) << line; // 100 * 0.495 / 0.505
    EXPECT_EQ(formatProgress(s, 0).find('['), std::string::npos); // plain line: no bar
    s.failures = 2;
    EXPECT_NE(formatProgress(s, 0).find("FAILURES 2"), std::string::npos);
    ProgressSnapshot zero;
    EXPECT_NE(formatProgress(zero, 0).find("ETA --"), std::string::npos);
    ProgressSnapshot jobs; // budgets as one factor: no planned case counts, finished jobs measure the work
    jobs.jobsDone = 5;
    jobs.jobsTotal = 10;
    EXPECT_NEAR(workFraction(jobs), 0.5, 1e-9);
}

std::optional<Options> parse(std::vector<char const*> args) {
    args.insert(args.begin(), "certify");
    return parseArgs(static_cast<int>(args.size()), args.data(), "/default/certificate");
}

TEST(Args, DefaultsAndFlags) {
    Options o = *parse({});
    EXPECT_EQ(o.outDir, "/default/certificate");
    EXPECT_EQ(o.scale, 1.0);
    EXPECT_EQ(o.seed, 20261129u);
    EXPECT_TRUE(o.exhaustive && o.properties);
    EXPECT_FALSE(o.allowPtxJit);
    o = *parse({"--out", "/x", "--scale", "0.25", "--seed", "7", "--gpus", "1,0,1", "--contracts", "3,1", "--cases",
                "Padding.A=5", "--cases", "Padding.B=6", "--allow-ptx-jit", "--no-exhaustive", "--progress", "lines"});
    EXPECT_EQ(o.outDir, "/x");
    EXPECT_EQ(o.scale, 0.25);
    EXPECT_EQ(o.seed, 7u);
    EXPECT_EQ(o.gpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(o.only, (std::vector<int>{1, 3}));
    EXPECT_EQ(o.cases.at("Padding.A"), 5);
    EXPECT_EQ(o.cases.at("Padding.B"), 6);
    EXPECT_TRUE(o.allowPtxJit);
    EXPECT_FALSE(o.exhaustive);
    EXPECT_EQ(o.progress, "lines");
    EXPECT_FALSE(parse({"--exhaustive-only"})->properties);
    EXPECT_EQ(o.timeLimitMinutes, 0.0);
    EXPECT_EQ(parse({"--time-limit", "14"})->timeLimitMinutes, 14.0);
    EXPECT_THROW(parse({"--time-limit", "-1"}), std::runtime_error);
    // The compute-sanitizer part's flags (certify_sanitize.h).
    EXPECT_EQ(o.sanitize.tools, (std::vector<std::string>{"memcheck", "racecheck"}));
    EXPECT_TRUE(o.sanitize.enabled);
    o = *parse({"--out", "d", "--sanitizers=racecheck", "--sanitize-jobs=3", "--no-sanitizers"});
    EXPECT_EQ(o.outDir, "d");
    EXPECT_EQ(o.sanitize.tools, std::vector<std::string>{"racecheck"});
    EXPECT_EQ(o.sanitize.jobs, 3);
    EXPECT_FALSE(o.sanitize.enabled);
}

TEST(Args, BadArgumentsThrow) {
    EXPECT_THROW(parse({"--contracts", "9"}), std::runtime_error);
    EXPECT_THROW(parse({"--cases", "Padding.A"}), std::runtime_error);
    EXPECT_THROW(parse({"--cases", "Padding.A=0"}), std::runtime_error);
    EXPECT_THROW(parse({"--progress", "fancy"}), std::runtime_error);
    EXPECT_THROW(parse({"--no-exhaustive", "--exhaustive-only"}), std::runtime_error);
    EXPECT_THROW(parse({"--bogus"}), std::runtime_error);
    EXPECT_THROW(parse({"--sanitizers=helgrind"}), std::runtime_error);
    EXPECT_THROW(parse({"--sanitizers="}), std::runtime_error);
    for (char const* arg : {"--sanitize-jobs=0", "--scale=0", "--child-timeout=-1"}) {
        try {
            parse({arg});
            ADD_FAILURE() << arg << " accepted";
        } catch (std::runtime_error const& e) {
            std::string const what = e.what();
            EXPECT_NE(what.find("must be a number > 0, got '"), std::string::npos) << what.substr(0, 200);
            EXPECT_EQ(what.find("1.797"), std::string::npos) << what.substr(0, 200); // CLI11's range text
        }
    }
}

// A certificate as certify_report.cc builds it, for one GPU.
json sampleCertificate() {
    json prop = {{"id", "Padding.PaddedRowsAllMinusOneAndPoisonIgnored"},
                 {"seed", uint64_t(4000000000u)},
                 {"rc_params", "max_success=4 seed=11"},
                 {"cases_planned", 4},
                 {"cases_run", 4},
                 {"verdict", "PASS"},
                 {"seconds", 1.5},
                 {"failures", json::array()},
                 {"fixtures", json::array()},
                 {"log", "/c/gpu0/logs/Padding.A.log"}};
    json check = {{"inputs", 65536}, {"expected_inputs", 65536}, {"mismatches", 0}, {"device_function", "f"}};
    json checks;
    for (char const* n : {"bf16_to_float", "half_to_float"}) {
        checks[n] = check;
    }
    // The float-input checks cover all 2^32 inputs: a count that does not fit an int must still render.
    check["inputs"] = check["expected_inputs"] = int64_t(1) << 32;
    for (char const* n : {"float_to_bf16", "float_to_half", "rsqrt_rn"}) {
        checks[n] = check;
    }
    json gpu = {{"index", 0},
                {"name", "NVIDIA H200"},
                {"uuid", "GPU-1"},
                {"sm", "90"},
                {"sass", {{"carried", true}, {"message", "the binary carries SASS for sm_90 (cubin sm_90)"}}},
                {"contracts", json::array({{{"number", 3}, {"name", "padding"}, {"properties", json::array({prop})}}})},
                {"exhaustive", {{"checks", checks}, {"error", ""}, {"seconds", 9.0}}}};
    return {{"format", "qsa-certificate/1"},
            {"git", {{"commit", "abc"}, {"source", "env"}}},
            {"build",
             {{"sass_archs", json::array({"80", "90"})},
              {"ptx_archs", json::array({"90"})},
              {"cuda_toolkit_compiled", 13000}}},
            {"cuda",
             {{"runtime_version", 13000},
              {"driver_api_version", 13000},
              {"driver_release", "580.159.04"},
              {"driver_module", "NVIDIA UNIX Open Kernel Module for x86_64 580.159.04 Release Build"}}},
            {"budget", {{"scale", 1.0}, {"base_seed", 1}, {"properties", true}, {"exhaustive", true}}},
            {"gpus", json::array({gpu})},
            {"times", {{"started_utc", "2026-11-29T00:00:00Z"}, {"total_seconds", 10.5}}}};
}

TEST(Verdicts, PassOnlyWhenEverythingPasses) {
    json c = sampleCertificate();
    computeVerdicts(c);
    EXPECT_EQ(c["verdict"], "PASS");
    EXPECT_EQ(c["gpus"][0]["contracts"][0]["cases_run"], 4);
    // A failing property, exhaustive mismatches, a missing check, fewer inputs than every pattern and an
    // exhaustive child error: certify_e2e_test asserts each FAIL on the built certify.

    json nosass = sampleCertificate();
    nosass["gpus"][0]["sass"]["carried"] = false;
    computeVerdicts(nosass);
    EXPECT_EQ(nosass["verdict"], "FAIL");
    nosass["gpus"][0]["sass"]["ptx_jit_allowed"] = true;
    computeVerdicts(nosass);
    EXPECT_EQ(nosass["verdict"], "PASS");

    json empty = sampleCertificate();
    empty["gpus"] = json::array();
    computeVerdicts(empty);
    EXPECT_EQ(empty["verdict"], "FAIL");

    json noprops = sampleCertificate();
    noprops["gpus"][0]["contracts"][0]["properties"] = json::array();
    computeVerdicts(noprops);
    EXPECT_EQ(noprops["verdict"], "FAIL");
}

TEST(Render, DeterministicAndSortedApartFromTimes) {
    json a = sampleCertificate();
    json b = sampleCertificate();
    b["times"]["total_seconds"] = 99.0;
    b["gpus"][0]["contracts"][0]["properties"][0]["seconds"] = 7.0;
    computeVerdicts(a);
    computeVerdicts(b);
    std::string const ja = renderJson(a);
    EXPECT_EQ(ja, renderJson(a));
    EXPECT_LT(ja.find("\"budget\""), ja.find("\"build\"")); // keys sorted
    EXPECT_LT(ja.find("\"build\""), ja.find("\"cuda\""));
    EXPECT_EQ(ja.back(), '\n');
    // Stripping every time gives identical documents.
    auto strip = [](json j) {
        j.erase("times");
        for (auto& g : j["gpus"]) {
            g["exhaustive"].erase("seconds");
            for (auto& c : g["contracts"]) {
                c.erase("seconds");
                for (auto& p : c["properties"]) {
                    p.erase("seconds");
                }
            }
        }
        return renderJson(j);
    };
    EXPECT_EQ(strip(a), strip(b));
    EXPECT_NE(renderJson(a), renderJson(b));
}

TEST(Render, MarkdownNamesEverythingAReviewerNeeds) {
    json c = sampleCertificate();
    computeVerdicts(c);
    std::string const md = renderMarkdown(c);
    EXPECT_EQ(md, renderMarkdown(c));
    for (char const* s :
         {"# QSA indexer certificate: PASS", "`abc` (env)", "| CUDA runtime (cudaRuntimeGetVersion) | 13.0",
          "| driver | 580.159.04 (driver API CUDA 13.0); NVIDIA UNIX Open Kernel Module for x86_64 580.159.04 Release "
          "Build |",
          "sm_80, sm_90", "compute_90", "## GPU 0: NVIDIA H200 (sm_90): PASS", "carries SASS for sm_90",
          "| 3. padding | PASS | 4 |",
          "| Padding.PaddedRowsAllMinusOneAndPoisonIgnored | core | none | 4 | 4000000000 | PASS |",
          "**certified: core (profiles none, ieee); not certified: hardened (no check judged)**",
          "- core: PASS (profile none 1/1, ieee 1/1 checks; fast not judged)\n- hardened: NONE RUN",
          "| rsqrt_rn | `f` | 4294967296 | 0 |", "| half_to_float | `f` | 65536 | 0 |", "## Failures\n\nNone."}) {
        EXPECT_NE(md.find(s), std::string::npos) << "missing: " << s << "\n" << md;
    }
    json f = sampleCertificate();
    json& p = f["gpus"][0]["contracts"][0]["properties"][0];
    p["verdict"] = "FAIL";
    p["failures"] = json::array({"properties/prop.cc:89\nFailed\nFalsifiable after 3 tests and 2 shrinks\nB=1 S=5"});
    p["fixtures"] = json::array({"/c/gpu0/outputs/Padding.A/captured/prop_padding_a"});
    computeVerdicts(f);
    std::string const fmd = renderMarkdown(f);
    EXPECT_NE(fmd.find("# QSA indexer certificate: FAIL"), std::string::npos);
    EXPECT_NE(fmd.find("  - Falsifiable after 3 tests and 2 shrinks\n"), std::string::npos) << fmd;
    EXPECT_NE(fmd.find("fixture: `/c/gpu0/outputs/Padding.A/captured/prop_padding_a`"), std::string::npos);
    EXPECT_NE(fmd.find("RC_PARAMS=\"max_success=4 seed=11\""), std::string::npos);
}

// The kit's certificate names the library file beside the GPU and driver (issue 34): path, size, sha256, build id,
// CUDA runtime and the load check; a linked-in implementation has no library rows.
TEST(Render, MarkdownNamesTheLibraryUnderTest) {
    json c = sampleCertificate();
    computeVerdicts(c);
    EXPECT_EQ(renderMarkdown(c).find("| library"), std::string::npos);
    c["implementation"] = {{"label", "@//api:loaded"},
                           {"library",
                            {{"path", "/k/libqsa.so"},
                             {"bytes", 6040736},
                             {"sha256", "66fc99d3"},
                             {"build_id", "89ba2eb1"},
                             {"cuda_runtime", "static (libcudart_static linked in, its symbols hidden)"},
                             {"nvcc", "Cuda compilation tools, release 13.0, V13.0.88"},
                             {"check", "6 API symbols resolved"}}}};
    std::string const md = renderMarkdown(c);
    for (char const* s :
         {"| library | `/k/libqsa.so`, 6040736 bytes |\n", "| library sha256 | `66fc99d3` |\n",
          "| library ELF build id | `89ba2eb1` |\n",
          "| library CUDA runtime | static (libcudart_static linked in, its symbols hidden); device code: "
          "Cuda compilation tools, release 13.0, V13.0.88 |\n",
          "| library check | 6 API symbols resolved |\n"}) {
        EXPECT_NE(md.find(s), std::string::npos) << "missing: " << s << "\n" << md;
    }
}

// A certificate of one GPU whose contract holds `props` (id, verdict, and for a fast check its QSA_FAST lines), judged
// under QSA_LEVELS=levels, QSA_PROFILE=profile (the exhaustive checks, core ieee, are judged only under ieee).
struct Prop {
    std::string id, verdict;
    std::vector<std::string> fast;
};
json certWith(std::vector<Prop> const& props, std::string const& levels, std::string const& profile) {
    json c = sampleCertificate();
    c["budget"]["levels"] = levels;
    c["budget"]["profile"] = profile;
    json& list = c["gpus"][0]["contracts"][0]["properties"];
    json const stub = list[0];
    list = json::array();
    for (Prop const& p : props) {
        json j = stub;
        j["id"] = p.id;
        j["verdict"] = p.verdict;
        if (!p.fast.empty())
            j["fast"] = p.fast;
        list.push_back(j);
    }
    return c;
}
std::string fastLine(std::string const& id, int64_t elements) {
    return "QSA_FAST " + id + " judged_elements=" + std::to_string(elements) +
           " unjudged_elements=12 judged_rows=3000 ambiguous_rows=7 eps_r=2^-21";
}
std::vector<std::string> summaryOf(json const& c) {
    return c["summary"].get<std::vector<std::string>>();
}

TEST(Verdicts, CoreFailureIsNotCertified) {
    json c = certWith({{"Padding.PaddedRowsAllMinusOneAndPoisonIgnored", "PASS", {}},
                       {"Layout.PrefillRowsObeyK4", "FAIL", {}},
                       {"DecodeStages.B1QPrepMatchesReference", "FAIL", {}},
                       {"Padding.InvalidDecodeRowsAreInert", "PASS", {}}},
                      "core,hardened", "ieee");
    c["gpus"][0]["exhaustive"]["checks"]["rsqrt_rn"]["mismatches"] = 2;
    computeVerdicts(c);
    EXPECT_EQ(summaryOf(c), (std::vector<std::string>{
                                "certified: hardened (profile none); not certified: core (3 checks fail)",
                                "core: FAIL (3 checks: 1 profile none, 2 ieee; fast not judged)",
                                "hardened: PASS (profile none 1/1 checks; no ieee check ran; fast not judged)"}));
    EXPECT_EQ(c["levels"]["core"]["profiles"]["ieee"]["failing"],
              json::array({"DecodeStages.B1QPrepMatchesReference (GPU 0)", "Exhaustive.Primitives (GPU 0)"}));
    EXPECT_EQ(c["verdict"], "FAIL");
}

// What QSA_LEVELS / QSA_PROFILE drop is NOT JUDGED, never PASS, and never certified; a selected level with no
// judged check is not certified either.
TEST(Verdicts, LevelsNotSelectedAreNotJudged) {
    json none = certWith({{"DecodeStages.B1QPrepHostilePoolMatchesReference", "NOT_JUDGED", {}}}, "hardened", "none");
    computeVerdicts(none);
    EXPECT_EQ(summaryOf(none),
              (std::vector<std::string>{"certified: none; not certified: core (NOT JUDGED), hardened (no check judged)",
                                        "core: NOT JUDGED (QSA_LEVELS=hardened)",
                                        "hardened: NONE RUN (no check judged; ieee, fast not judged)"}));
}

// Contract section 9: under QSA_PROFILE=fast the fast checks are judged from their verdicts AND their QSA_FAST lines
// (summed per level); ieee is not judged. Under ieee the same fast checks are not judged.
TEST(Verdicts, FastProfileSumsQsaFastLinesPerLevel) {
    std::string const a = "Differential.PrefillWithinFastEnclosure", b = "DecodeStages.B2LogitsWithinFastEnclosure";
    auto fastCert = [&](std::vector<std::string> const& la, std::vector<std::string> const& lb) {
        return certWith(
            {{"Padding.PaddedRowsAllMinusOneAndPoisonIgnored", "PASS", {}}, {a, "PASS", la}, {b, "PASS", lb}},
            "core,hardened", "fast");
    };
    std::string const la = fastLine(a, 1000000);
    // A line of another check does not count for it; a malformed line of its own fails it too.
    json other = fastCert({la}, {la});
    computeVerdicts(other);
    EXPECT_EQ(other["levels"]["core"]["verdict"], "FAIL");
    json bad = fastCert({la}, {"QSA_FAST " + b + " judged_elements=x"});
    computeVerdicts(bad);
    EXPECT_EQ(bad["levels"]["core"]["failing"], json::array({b + " printed a malformed QSA_FAST line (GPU 0)"}));
    EXPECT_EQ(bad["gpus"][0]["contracts"][0]["properties"][2]["verdict"], "FAIL");
    EXPECT_EQ(bad["verdict"], "FAIL");
    // Lines that judged nothing at all: the level FAILS (section 9.2: fast never turns vacuous).
    json vacuous = fastCert({fastLine(a, 0)}, {fastLine(b, 0)});
    computeVerdicts(vacuous);
    EXPECT_EQ(vacuous["summary"][1], "core: FAIL (its fast checks judged 0 elements; profile none 1/1, fast 2/2 "
                                     "checks, 0 elements judged at eps_r 2^-21; ieee not judged)");
    EXPECT_EQ(vacuous["certified_line"],
              "certified: none; not certified: core (its fast checks judged 0 elements), hardened (no check judged)");
    EXPECT_EQ(vacuous["verdict"], "FAIL");
    // Profile ieee: the same fast checks are not judged (NOT JUDGED whatever their lines say), ieee is.
    json ieee = certWith({{"Padding.PaddedRowsAllMinusOneAndPoisonIgnored", "PASS", {}},
                          {a, "NOT_JUDGED", {la}},
                          {"DecodeStages.B1QPrepMatchesReference", "PASS", {}}},
                         "core,hardened", "ieee");
    computeVerdicts(ieee);
    EXPECT_EQ(ieee["summary"][1], "core: PASS (profile none 1/1, ieee 2/2 checks; fast not judged)");
    EXPECT_EQ(ieee["levels"]["core"]["profiles"]["fast"]["not_judged"], json::array({a + " (GPU 0)"}));
    EXPECT_FALSE(ieee["levels"]["core"].contains("fast"));
}

TEST(Parsers, QsaFastLines) {
    std::optional<FastJudged> const f = parseFastLine("QSA_FAST DecodeStages.B1QPrepWithinFastEnclosure "
                                                      "judged_elements=123 unjudged_elements=4 judged_rows=5 "
                                                      "ambiguous_rows=1 eps_r=2^-21");
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->id, "DecodeStages.B1QPrepWithinFastEnclosure");
    EXPECT_EQ(f->judgedElements, 123);
    EXPECT_EQ(f->unjudgedElements, 4);
    EXPECT_EQ(f->judgedRows, 5);
    EXPECT_EQ(f->ambiguousRows, 1);
    EXPECT_EQ(f->epsR, "2^-21");
    // Any order, extra fields ignored.
    EXPECT_TRUE(parseFastLine("QSA_FAST A.B eps_r=2^-20 ambiguous_rows=0 judged_rows=1 extra=z unjudged_elements=0 "
                              "judged_elements=9")
                    .has_value());
    for (char const* bad :
         {"", "QSA_FAST",
          "QSA_COVERAGE A.B judged_elements=1 unjudged_elements=0 judged_rows=1 "
          "ambiguous_rows=0 eps_r=2^-21",
          "QSA_FAST A.B judged_elements=1 unjudged_elements=0 judged_rows=1 ambiguous_rows=0",
          "QSA_FAST A.B judged_elements=-1 unjudged_elements=0 judged_rows=1 ambiguous_rows=0 eps_r=1",
          "QSA_FAST A.B judged_elements=1e6 unjudged_elements=0 judged_rows=1 ambiguous_rows=0 eps_r=1",
          "QSA_FAST judged_elements=1 unjudged_elements=0 judged_rows=1 ambiguous_rows=0 eps_r=1"}) {
        EXPECT_FALSE(parseFastLine(bad).has_value()) << bad;
    }
    EXPECT_EQ(shortCount(950), "950");
    EXPECT_EQ(shortCount(12345), "12.3k");
    EXPECT_EQ(shortCount(1200000), "1.2M");
    EXPECT_EQ(shortCount(999999), "1.0M");
    EXPECT_EQ(shortCount(3400000000), "3.4G");
}

TEST(Parsers, FailedChecksSeedLinesAndCoverage) {
    std::string const out = "x\nQSA_CHECK_FAILED Fixture.Layout level=core profile=none contract=2 fixture=a: t\n"
                            "QSA_CHECK_FAILED Fixture.Layout level=core profile=none contract=2 fixture=a: t\n"
                            "QSA_SEED Layout.PrefillRowsObeyK4 base=1 shard=0/1 seed=1 cases=17 of 17 (...)\n"
                            "  QSA_COVERAGE Layout.PrefillRowsObeyK4 nVis>512=3/17\n";
    std::vector<FailedCheck> const f = parseFailedChecks(out);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].id, "Fixture.Layout");
    EXPECT_EQ(f[0].level, "core");
    EXPECT_EQ(parseSeedLineCases(out, "Layout.PrefillRowsObeyK4"), 17);
    EXPECT_FALSE(parseSeedLineCases(out, "Layout.DecodeRowsObeyK4").has_value());
    EXPECT_EQ(linesStartingWith(out, "QSA_COVERAGE "),
              std::vector<std::string>{"QSA_COVERAGE Layout.PrefillRowsObeyK4 nVis>512=3/17"});
}

// ---- the sanitizer part (certify_sanitize.h): run_all.sh's exact line format, the summary's verdict rules,
// argument extraction and the certificate verdict.

namespace sanitize_tests {

using namespace qsa::certify::sanitize;

TEST(CertifySanitize, ParsesRunAllLines) {
    auto p = parseLine("racecheck kernels/decode_select_test                   errors=0    hazards=0        "
                       "41.2 s  PASS");
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->tool, "racecheck");
    EXPECT_EQ(p->binary, "kernels/decode_select_test");
    EXPECT_EQ(p->errors, "0");
    EXPECT_EQ(p->hazards, "0");
    EXPECT_DOUBLE_EQ(p->seconds, 41.2);
    EXPECT_EQ(p->verdict, "PASS");
    auto f = parseLine("memcheck  properties/layout_test_gpu errors=?    hazards=-       150.0 s  FAIL  (timeout "
                       "after 150 s; log /x.log)");
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->verdict, "FAIL");
    EXPECT_EQ(f->errors, "?");
    EXPECT_NE(f->note.find("timeout"), std::string::npos);
    EXPECT_FALSE(parseLine("run_all --sanitize: 3/3 pairs PASS").has_value());
    EXPECT_FALSE(parseLine("PASS kernels/expand_test cases=3 passed=3 1.0 s").has_value());
}

TEST(CertifySanitize, VerdictNeedsEveryPairAndExitZero) {
    std::string const ok = "memcheck  a/b errors=0 hazards=- 1.0 s  PASS\nracecheck a/b errors=0 hazards=0 2.0 s  "
                           "PASS\nrun_all --sanitize: 2/2 pairs PASS\n";
    EXPECT_EQ(summarize(ok, 0, {"memcheck", "racecheck"})["verdict"], "PASS");
    EXPECT_EQ(summarize(ok, 1, {"memcheck", "racecheck"})["verdict"], "FAIL"); // the script's own status counts
    std::string const bad = "racecheck a/b errors=0 hazards=5 2.0 s  FAIL  (sanitizer findings; log x)\n";
    nlohmann::json const b = summarize(bad, 1, {"racecheck"});
    EXPECT_EQ(b["verdict"], "FAIL");
    EXPECT_EQ(b["failed"], 1);
    EXPECT_EQ(summarize("", 0, {"memcheck"})["verdict"], "FAIL"); // nothing ran is not a pass
}

TEST(CertifySanitize, FailMakesTheCertificateFailNotRunIsShown) {
    nlohmann::json cert = {{"verdict", "PASS"}};
    cert["sanitizers"] = summarize("racecheck a/b errors=1 hazards=1 2.0 s  FAIL\n", 1, {"racecheck"});
    applyVerdict(cert);
    EXPECT_EQ(cert["verdict"], "FAIL");
    nlohmann::json nr = {{"verdict", "PASS"}, {"sanitizers", notRun("--no-sanitizers")}};
    applyVerdict(nr);
    EXPECT_EQ(nr["verdict"], "PASS");
    EXPECT_NE(markdown(nr).find("NOT RUN"), std::string::npos);
}

} // namespace sanitize_tests

} // namespace

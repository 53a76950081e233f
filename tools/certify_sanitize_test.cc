// The pure parts of certify's sanitizer part (tools/certify_sanitize.h): the line parser on run_all.sh's
// exact format, the summary's verdict rules, argument extraction, and the certificate verdict.
#include "tools/certify_sanitize.h"

#include <gtest/gtest.h>

namespace qsa {
namespace certify {
namespace sanitize {
namespace {

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

TEST(CertifySanitize, TakesItsFlagsOutOfArgv) {
    char a0[] = "certify", a1[] = "--out", a2[] = "d", a3[] = "--sanitizers=racecheck", a4[] = "--sanitize-jobs=3";
    char* argv[] = {a0, a1, a3, a2, a4, nullptr};
    int argc = 5;
    Options const o = takeArgs(argc, argv);
    ASSERT_EQ(argc, 3);
    EXPECT_STREQ(argv[1], "--out");
    EXPECT_STREQ(argv[2], "d");
    EXPECT_EQ(o.tools, std::vector<std::string>{"racecheck"});
    EXPECT_EQ(o.jobs, 3);
    char b1[] = "--sanitizers=helgrind";
    char* bad[] = {a0, b1, nullptr};
    int n = 2;
    EXPECT_THROW(takeArgs(n, bad), std::runtime_error);
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

} // namespace
} // namespace sanitize
} // namespace certify
} // namespace qsa

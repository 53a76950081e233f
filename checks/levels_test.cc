// The registry parses, lookups follow gtest's typed / parameterized names, and the selection judges what
// QSA_LEVELS / QSA_PROFILE select (contract section 8).
#include "checks/levels.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace qsa {
namespace checks {
namespace {

TEST(Levels, RegistryParsesAndEveryRowHasALevelAndProfile) {
    ASSERT_GT(registry().size(), 40u);
    for (CheckInfo const& c : registry()) {
        EXPECT_TRUE(c.level == "core" || c.level == "hardened") << c.id;
        EXPECT_TRUE(c.profile == "none" || c.profile == "ieee" || c.profile == "fast") << c.id;
    }
}

TEST(Levels, LookupExactWildcardTypedAndParameterized) {
    EXPECT_EQ(lookup("Layout.PrefillRowsObeyK4").level, "core");
    EXPECT_EQ(lookup("Padding.InvalidDecodeRowsAreInert").level, "hardened");
    EXPECT_EQ(lookup("Differential.PrefillMatchesReference").profile, "ieee");
    EXPECT_EQ(lookup("QPrepTest/half.SmallContextsAndPadding").pattern, "QPrepTest.SmallContextsAndPadding");
    EXPECT_EQ(lookup("QPrepTest/half.AroundBudgetAndOddS").pattern, "QPrepTest.*");
    EXPECT_EQ(lookup("DecodePrepTest/bf16.HolesAndOtherGeometry").level, "hardened");
    EXPECT_EQ(lookup("DecodePrepTest/0.FullTable").level, "hardened"); // its rows include ctx 0 and -1
    EXPECT_EQ(lookup("DecodeScoresTest/0.LongContext").level, "core");
    EXPECT_EQ(lookup("Keys/SortTest.Shapes/3").pattern, "SortTest.*");
    EXPECT_EQ(lookup("PrefillTest/half.DeterministicWhateverTheWorkspaceHeld").profile, "ieee"); // vs reference
    EXPECT_EQ(lookup("PrefillTest/half.SmallContexts").profile, "ieee");
    EXPECT_FALSE(lookup("Nope.Nothing").registered());
}

TEST(Levels, SelectionJudgesOnlyWhatIsSelected) {
    CheckInfo const core = lookup("Layout.PrefillRowsObeyK4");
    CheckInfo const hard = lookup("Padding.InvalidDecodeRowsAreInert");
    CheckInfo const ieee = lookup("Differential.PrefillMatchesReference");
    Selection const all = parseSelection("", "");
    EXPECT_TRUE(all.judged(core) && all.judged(hard) && all.judged(ieee));
    Selection const c = parseSelection("core", "none");
    EXPECT_TRUE(c.judged(core));
    EXPECT_FALSE(c.judged(hard));
    EXPECT_FALSE(c.judged(ieee));
    EXPECT_EQ(c.describe(), "levels=core profile=none");
    EXPECT_FALSE(all.judged(lookup("Nope.Nothing"))); // unregistered: never judged, never a pass
    EXPECT_EQ(raisedTo(lookup("Fixture.Differential"), "hardened").level, "hardened");
    EXPECT_THROW(parseSelection("core,strict", "ieee"), std::runtime_error);
    EXPECT_THROW(parseSelection("core", "fastmath"), std::runtime_error);
    Selection const f = parseSelection("core", "fast"); // contract section 9: fast judges fast and none checks
    EXPECT_TRUE(f.judged(core));
    EXPECT_FALSE(f.judged(ieee));
    CheckInfo fastCheck = ieee;
    fastCheck.profile = "fast";
    EXPECT_TRUE(f.judged(fastCheck));
    EXPECT_FALSE(c.judged(fastCheck));
    EXPECT_NE(notJudgedLine(hard, c).find("QSA_NOT_JUDGED Padding.InvalidDecodeRowsAreInert level=hardened"),
              std::string::npos);
}

} // namespace
} // namespace checks
} // namespace qsa

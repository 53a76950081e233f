// Levels and profiles of every check (../shared/CONTRACT.md section 8), from the one registry
// checks/registry.tsv (compiled in, so static binaries carry it), and the selection of what is judged:
//   QSA_LEVELS   comma list of core, hardened (default: all)
//   QSA_PROFILE  ieee | fast | none (default ieee; none judges no numerics-profile check; fast: section 9)
// A check is judged iff its level is selected and its profile is "none" or the selected profile. A check not
// judged prints notJudgedLine() and is never reported as a pass.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace qsa {
namespace checks {

struct CheckInfo {
    std::string id;      // "Suite.Name" as asked
    std::string pattern; // the registry row that matched ("Suite.Name" or "Suite.*"); "" when none
    std::string level;   // core | hardened ("" when not registered)
    std::string profile; // none | ieee | fast
    int contract = 0;    // section 7 number, 0 for none
    std::string what;    // one line
    bool registered() const { return !pattern.empty(); }
};

// Every row of the registry, in file order.
std::vector<CheckInfo> const& registry();

// The row for a gtest / property id: exact "Suite.Name", else "Suite.*"; the suite of a typed or
// parameterized test ("QPrepTest/half", "Keys/SortTest") and a value suffix ("Shapes/3") are stripped.
CheckInfo lookup(std::string const& id);

// `info` with its level raised to hardened (a fixture whose inputs are hardened, e.g. out-of-plane ids).
CheckInfo raisedTo(CheckInfo info, std::string const& level);

struct Selection {
    std::set<std::string> levels; // subset of {core, hardened}
    std::string profile;          // ieee | fast | none
    bool judged(CheckInfo const& c) const;
    std::string describe() const; // "levels=core,hardened profile=ieee"
};
// From QSA_LEVELS / QSA_PROFILE (defaults: every level, ieee). Throws std::runtime_error naming the
// variable and the bad value.
Selection selectionFromEnv();
Selection parseSelection(std::string const& levels, std::string const& profile);

// "level=core profile=ieee contract=1"
std::string tags(CheckInfo const& c);
// "QSA_NOT_JUDGED <id> level=... profile=... (selected: levels=... profile=...)"
std::string notJudgedLine(CheckInfo const& c, Selection const& s);
// "QSA_CHECK_FAILED <id> level=... profile=... contract=N": one per failing check, parsed by certify.
std::string failedLine(CheckInfo const& c);

} // namespace checks
} // namespace qsa

// Coverage of the property runs, measured and enforced (issue 13.2, in the spirit of QuickCheck's
// checkCoverage): a property body names the regions each case reaches with cover(); QSA_PROP counts them
// over the cases that passed and ends the run with ONE line on stdout,
//
//   QSA_COVERAGE <Suite.Property> cases=<n> <region>=<hits>/<n> ... floors=<region>:<pct>,... check=<verdict>
//
// and fails the test when a region with a floor was reached in fewer than floor * n cases. The floors hold
// at the default budget; a run of fewer cases than the property's default (a reproduce= run, a small
// RC_PARAMS max_success) reports its coverage and says `check=skipped(...)` instead of failing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qsa {
namespace prop {
namespace coverage {

// Region names: [a-z0-9_<>] only, so that the line splits on spaces and '='.
// Counts `region` as reached by the current case when `hit`. `floor` (a fraction of cases, 0 = none) is
// the share the region must reach over a run at the default budget; the largest floor given wins.
void cover(std::string const& region, bool hit, double floor = 0.0);

// The accumulator of one property run (QSA_PROP owns one per TEST).
class Run {
public:
    Run(std::string id, int defaultCases);
    ~Run();
    Run(Run const&) = delete;
    Run& operator=(Run const&) = delete;
    // A case starts: its cover() calls are held until passed() commits them (a discarded or failing case
    // does not count).
    void beginCase();
    void passed();
    // The QSA_COVERAGE line, and the floor violations ("" when none or when not enforced).
    std::string line() const;
    std::string violations() const;
    bool enforced() const { return cases_ >= defaultCases_; }

    // For cover(): the run now in progress (nullptr outside QSA_PROP).
    static Run* current();
    void note(std::string const& region, bool hit, double floor);

private:
    struct Region {
        int64_t hits = 0;
        double floor = 0.0;
    };
    std::string id_;
    int defaultCases_;
    int64_t cases_ = 0;
    std::vector<std::string> order_; // first-seen order, for a stable line
    std::map<std::string, Region> regions_;
    std::map<std::string, bool> pending_; // this case's hits
    Run* previous_;
};

// Prints run's QSA_COVERAGE line on stdout and, when the test has not failed otherwise and the run used
// at least the default number of cases, fails it (gtest ADD_FAILURE) for every region below its floor.
void finish(Run const& run);

// Runs `body` as one case of the current run: counted only when it returns normally.
template <typename F>
void runCase(F const& body) {
    Run* r = Run::current();
    if (r != nullptr)
        r->beginCase();
    body();
    if (r != nullptr)
        r->passed();
}

} // namespace coverage
} // namespace prop
} // namespace qsa

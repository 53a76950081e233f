// Coverage of the property runs, measured and enforced (issue 13.2, in the spirit of QuickCheck's
// checkCoverage): a property body names the regions each case reaches with cover() / coverDrawn();
// QSA_PROP counts them over the cases that passed and ends the run with ONE line on stdout,
//
//   QSA_COVERAGE <Suite.Property> cases=<n> <region>=<hits>/<n> ... floors=<region>:<pct>,<region>:~<pct>,...
//                check=<verdict>
//
// Two kinds of floor, so that a correct run never fails for want of luck (a floor that flakes is no floor):
// - cover(region, hit, floor): the share is met BY CONSTRUCTION (regimeGen / sizeShare put the region in a
//   fixed share of the sizes of any run); the run fails when fewer than floor * n cases reached it.
// - coverDrawn(region, hit, rate), printed `region:~pct`: the region is reached by random draws, at least
//   `rate` of the cases on average (tools/coverage_margin.py measures it over seeds); the run fails when its
//   hits are below what Bin(n, rate) reaches with probability 1e-6, so a generator that keeps its rate fails
//   a run with probability < 1e-6 (also when the cases' chances differ by size: Hoeffding 1956, the
//   binomial of the mean chance bounds the lower tail), and one that stopped reaching the region fails.
// The floors hold at the default budget; a run of fewer cases than the property's default (a reproduce=
// run, a small RC_PARAMS max_success) reports its coverage and says `check=skipped(...)` instead.
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
// Counts `region` as reached when `hit`, a region reached by random draws at `rate` or more of the cases
// (see above); all the floors of a region are of one kind (calls without a floor only count).
void coverDrawn(std::string const& region, bool hit, double rate);

// The false-alarm probability of a drawn floor: a run fails when P(Bin(n, rate) <= hits) is below it.
constexpr double kDrawnAlpha = 1e-6;
// The fewest hits of n cases that pass a drawn floor of `rate`: the least h with P(Bin(n, rate) <= h) >=
// kDrawnAlpha.
int64_t drawnNeeded(double rate, int64_t n);

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
    static Run* current() { return current_; }
    void note(std::string const& region, bool hit, double floor, bool drawn);

private:
    struct Region {
        int64_t hits = 0;
        double floor = 0.0;
        bool drawn = false;
    };
    std::string id_;
    int defaultCases_;
    int64_t cases_ = 0;
    std::vector<std::string> order_; // first-seen order, for a stable line
    std::map<std::string, Region> regions_;
    std::map<std::string, bool> pending_; // this case's hits
    Run* previous_;
    static Run* current_;
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

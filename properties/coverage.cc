// Coverage accumulator of the property runs (see coverage.h).
#include "properties/coverage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace qsa {
namespace prop {
namespace coverage {
namespace {

Run*& currentRun() {
    static Run* r = nullptr;
    return r;
}

bool validName(std::string const& s) {
    return !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_<>") == std::string::npos;
}

// Hits needed for `floor` over `cases` cases (a floor of 10% over 150 cases needs 15).
int64_t needed(double floor, int64_t cases) {
    return int64_t(std::ceil(floor * double(cases) - 1e-9));
}

} // namespace

void cover(std::string const& region, bool hit, double floor) {
    if (Run* r = Run::current())
        r->note(region, hit, floor);
}

Run::Run(std::string id, int defaultCases) : id_(std::move(id)), defaultCases_(defaultCases), previous_(currentRun()) {
    currentRun() = this;
}

Run::~Run() {
    currentRun() = previous_;
}

Run* Run::current() {
    return currentRun();
}

void Run::beginCase() {
    pending_.clear();
}

void Run::note(std::string const& region, bool hit, double floor) {
    if (!validName(region))
        throw std::runtime_error("coverage::cover: region name \"" + region + "\" is not [a-z0-9_<>]+");
    if (floor < 0.0 || floor > 1.0)
        throw std::runtime_error("coverage::cover: floor of " + region + " must be in [0, 1], got " +
                                 std::to_string(floor));
    auto it = regions_.find(region);
    if (it == regions_.end()) {
        order_.push_back(region);
        it = regions_.emplace(region, Region{}).first;
    }
    it->second.floor = std::max(it->second.floor, floor);
    pending_[region] = pending_[region] || hit;
}

void Run::passed() {
    ++cases_;
    for (auto const& [region, hit] : pending_) {
        if (hit)
            ++regions_[region].hits;
    }
    pending_.clear();
}

std::string Run::line() const {
    std::ostringstream os;
    os << "QSA_COVERAGE " << id_ << " cases=" << cases_;
    for (std::string const& r : order_)
        os << " " << r << "=" << regions_.at(r).hits << "/" << cases_;
    os << " floors=";
    bool first = true;
    for (std::string const& r : order_) {
        double const f = regions_.at(r).floor;
        if (f <= 0.0)
            continue;
        os << (first ? "" : ",") << r << ":" << int(std::lround(f * 100)) << "%";
        first = false;
    }
    if (first)
        os << "none";
    if (enforced()) {
        os << " check=" << (violations().empty() ? "pass" : "FAIL");
    } else {
        os << " check=skipped(" << cases_ << "_cases<default_" << defaultCases_ << ")";
    }
    return os.str();
}

std::string Run::violations() const {
    if (!enforced())
        return "";
    std::ostringstream os;
    for (std::string const& r : order_) {
        Region const& g = regions_.at(r);
        if (g.floor > 0.0 && g.hits < needed(g.floor, cases_)) {
            os << id_ << ": coverage of region " << r << " is " << g.hits << "/" << cases_ << ", below its floor of "
               << int(std::lround(g.floor * 100)) << "% (" << needed(g.floor, cases_)
               << " cases): the generators no longer reach it\n";
        }
    }
    return os.str();
}

void finish(Run const& run) {
    std::cout << run.line() << std::endl;
    if (::testing::Test::HasFailure())
        return; // the property failed: its counterexample is the report, not its coverage
    std::string const v = run.violations();
    if (!v.empty())
        ADD_FAILURE() << v;
}

} // namespace coverage
} // namespace prop
} // namespace qsa

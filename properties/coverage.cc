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

bool validName(std::string const& s) {
    return !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_<>") == std::string::npos;
}

// Hits needed for a floor met by construction: `floor` of `cases` (a floor of 10% over 150 cases needs 15).
int64_t constructedNeeded(double floor, int64_t cases) {
    return int64_t(std::ceil(floor * double(cases) - 1e-9));
}

// log P(Bin(n, p) = k), 0 < p < 1.
double logBinomialPmf(int64_t n, int64_t k, double p) {
    return std::lgamma(double(n) + 1.0) - std::lgamma(double(k) + 1.0) - std::lgamma(double(n - k) + 1.0) +
           double(k) * std::log(p) + double(n - k) * std::log1p(-p);
}

} // namespace

int64_t drawnNeeded(double rate, int64_t n) {
    if (rate <= 0.0 || n <= 0)
        return 0;
    if (rate >= 1.0)
        return n; // every case reaches it: P(Bin(n, 1) <= h) = 0 for h < n
    // The smallest h with P(X <= h) >= alpha, summed upwards from 0 (the pmf rises towards the mean, so the
    // partial sums are exact to double rounding; n is at most a few thousand).
    double cdf = 0.0;
    for (int64_t h = 0; h <= n; ++h) {
        cdf += std::exp(logBinomialPmf(n, h, rate));
        if (cdf >= kDrawnAlpha)
            return h;
    }
    return n;
}

void cover(std::string const& region, bool hit, double floor) {
    if (Run* r = Run::current())
        r->note(region, hit, floor, false);
}

void coverDrawn(std::string const& region, bool hit, double rate) {
    if (Run* r = Run::current())
        r->note(region, hit, rate, true);
}

Run* Run::current_ = nullptr;

Run::Run(std::string id, int defaultCases) : id_(std::move(id)), defaultCases_(defaultCases), previous_(current_) {
    current_ = this;
}

Run::~Run() {
    current_ = previous_;
}

void Run::beginCase() {
    pending_.clear();
}

void Run::note(std::string const& region, bool hit, double floor, bool drawn) {
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
    // The kind of a region is that of its floors (a call without a floor only counts).
    if (floor > 0.0) {
        if (it->second.floor > 0.0 && it->second.drawn != drawn)
            throw std::runtime_error("coverage::cover: region " + region +
                                     " has a floor both as drawn (coverDrawn) "
                                     "and as met by construction (cover)");
        it->second.drawn = drawn;
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
        os << (first ? "" : ",") << r << ":" << (regions_.at(r).drawn ? "~" : "") << int(std::lround(f * 100)) << "%";
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
        int64_t const need = g.drawn ? drawnNeeded(g.floor, cases_) : constructedNeeded(g.floor, cases_);
        if (g.floor <= 0.0 || g.hits >= need)
            continue;
        os << id_ << ": coverage of region " << r << " is " << g.hits << "/" << cases_ << ", below its floor of ";
        if (g.drawn) {
            os << "~" << int(std::lround(g.floor * 100)) << "% (drawn: " << need << " cases; at a rate of " << g.floor
               << " fewer come with probability < " << kDrawnAlpha
               << "): the generators no longer reach it at that rate\n";
        } else {
            os << int(std::lround(g.floor * 100)) << "% (" << need << " cases): the generators no longer reach it\n";
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

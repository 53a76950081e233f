// Generated corpora (issue 25 item 2): N qsa-fixture/1 fixtures drawn by the properties' own generators
// (generators.h: genPrefillSpec, genDecodeChainSpec; cases.h: decode chains), expected outputs from the CPU
// reference, each fixture's regions computed by regions.h and written into its case.json (`regions`), and a
// manifest.json with the per-fixture list and the coverage counts. For implementations outside C++
// (python/README.md): `qsa corpus --count N --seed S OUT` (//tools:qsa), then replay OUT anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qsa {
namespace prop {
namespace corpus {

struct Options {
    int count = 0;
    uint64_t seed = 0;
    // Only fixtures hitting at least one of these regions are kept (each slot redraws until one does), and
    // only the recipes that can reach one of them are drawn (README "Generated corpora"). Empty: all.
    std::vector<std::string> regions;
    std::string dtype = "both"; // "half", "bf16" or "both" (a draw of the other dtype is redrawn)
    // A fixture larger than this is redrawn (after the generators' own large-pool geometry, fitPool, is tried).
    // The decode recipe with nVis > 512 gets manyBlocksBytes: its pool spans >= 17 pages.
    uint64_t maxFixtureBytes = uint64_t(512) << 10;
    uint64_t manyBlocksBytes = uint64_t(4) << 20;
    // Prefill draws of the page-edge regime (S around 128: ctx > 128 needs > 128 rows of 8 KiB outIdx each).
    uint64_t pageEdgeBytes = uint64_t(3) << 19;
};

struct Entry {
    std::string name; // directory under OUT
    std::string pipeline, dtype, recipe;
    std::vector<std::string> regions;
    uint64_t bytes = 0;
    uint64_t seed = 0; // of the fixture's rc::Random
};

struct Result {
    std::vector<Entry> entries;
    uint64_t totalBytes = 0; // fixtures and manifest
    int draws = 0;           // specs drawn in all (redraws included)
};

// Every region name a corpus counts, in the manifest's order (the property regions of regions.h and the
// properties' own cover() names).
std::vector<std::string> const& regionNames();

// The version of the generator code (a hash of the generator and corpus sources, computed at build time,
// independent of git): a corpus is reproducible from (seed, count, options, version).
std::string generatorVersion();

// Writes the corpus into `out` (created; must not hold a manifest.json already) and returns what it wrote.
// Deterministic: the same options and version give byte-identical files. Throws std::runtime_error naming
// the option on bad options and when a slot finds no fixture hitting the requested regions.
Result writeCorpus(std::string const& out, Options const& o);

// The QSA_COVERAGE-style line of a corpus: `QSA_COVERAGE Corpus.seed_<S> cases=<n> <region>=<h>/<n> ...
// floors=none check=pass` (a corpus has no floors).
std::string coverageLine(Result const& r, uint64_t seed);

} // namespace corpus
} // namespace prop
} // namespace qsa

// Generated corpora (see corpus.h and README "Generated corpora").
#include "properties/corpus.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "fixtures/fixture.h"
#include "properties/cases.h"
#include "testing/rng.h"

namespace qsa {
namespace corpus_gen {
extern char const kSourcesHash[]; // corpus_version.cc, generated (properties/BUILD)
} // namespace corpus_gen

namespace prop {
namespace corpus {
namespace {

namespace fs = std::filesystem;
using fixtures::Fixture;

// Bumped when the corpus code changes what a seed produces in a way the source hash cannot see.
constexpr int kCorpusFormat = 1;
// Prefill logits are a stage output worth storing when they are cheap: B*S*MB floats up to 256 KiB.
constexpr uint64_t kCheapLogitsBytes = uint64_t(256) << 10;

// What a slot draws: the configurations the properties draw with (the comment names the property); the prefill
// recipes first (Drawer::draw).
enum class Recipe {
    kPrefill,          // Differential.PrefillMatchesReference: no pool, poisoned padding
    kPrefillPool,      // Differential / PoolHygiene: a valid pool
    kPrefillHostile,   // PoolHygiene hardened: holes, out-of-plane ids, truncated tables
    kPrefillTies,      // the tie-biased differential
    kDecode,           // PrefillDecode.StepsMatchPrefillRows: one step of a tie-biased chain
    kDecodeHostile,    // decode steps on hostile pools
    kDecodeManyBlocks, // nVis > 512 (regime kManyBlocks), ties across ranks 512/513 in 3/4 of them
    kDecodeInvalidRow, // Padding.InvalidDecodeRowsAreInert: one row with ctx / 4 > maxBlocks
};

struct RecipeInfo {
    Recipe recipe;
    char const* name;
    char const* contract;           // the fixture's contract
    std::vector<std::string> reach; // regions it can reach (for --regions)
};

// The regions a prefill recipe can reach: prefillRegions' (the pool's too when `pool`), padded rows, ties at rank 512.
std::vector<std::string> prefillReach(bool pool) {
    std::vector<std::string> v = {"padded_rows", "tie_at_rank_512"};
    for (NamedRegion const& n : named(PrefillRegions{}))
        if (pool || !n.pool)
            v.push_back(n.name);
    return v;
}

std::vector<RecipeInfo> const& recipes() {
    static std::vector<RecipeInfo> const r = {
        {Recipe::kPrefill, "prefill", "differential", prefillReach(false)},
        {Recipe::kPrefillPool, "prefill_pool", "differential", prefillReach(false)},
        {Recipe::kPrefillHostile, "prefill_hostile_pool", "pool hygiene", prefillReach(true)},
        {Recipe::kPrefillTies, "prefill_ties", "differential", prefillReach(false)},
        {Recipe::kDecode,
         "decode",
         "differential",
         {"bf16", "block_completes", "page_edge", "valid_at_floor_edge", "huge", "nonfinite_valid"}},
        {Recipe::kDecodeHostile,
         "decode_hostile_pool",
         "pool hygiene",
         {"bf16", "block_completes", "page_edge", "valid_at_floor_edge", "hole_used", "out_of_plane_used",
          "truncated_hit", "huge", "nonfinite_valid"}},
        {Recipe::kDecodeManyBlocks,
         "decode_many_blocks",
         "differential",
         {"bf16", "nvis_gt_512", "tie_at_rank_512", "block_completes", "valid_at_floor_edge", "huge",
          "nonfinite_valid"}},
        {Recipe::kDecodeInvalidRow,
         "decode_invalid_row",
         "padding",
         {"bf16", "invalid_row", "block_completes", "page_edge", "huge", "nonfinite_valid", "nonfinite_invalid_row"}},
    };
    return r;
}

// The slot cycle: half prefill, half decode, the nVis > 512 decode once per 40 (its fixtures are the largest,
// ~3 MB: a pool of >= 17 pages before and after), early in the cycle so that a small corpus has one.
constexpr Recipe kCycle[40] = {
    Recipe::kPrefill,        Recipe::kDecode,        Recipe::kPrefillPool, Recipe::kDecodeManyBlocks,
    Recipe::kPrefillHostile, Recipe::kDecodeHostile, Recipe::kPrefillTies, Recipe::kDecodeInvalidRow,
    Recipe::kPrefill,        Recipe::kDecode,        Recipe::kPrefillPool, Recipe::kDecodeHostile,
    Recipe::kPrefillHostile, Recipe::kDecode,        Recipe::kPrefillTies, Recipe::kDecodeInvalidRow,
    Recipe::kPrefill,        Recipe::kDecode,        Recipe::kPrefillPool, Recipe::kDecodeHostile,
    Recipe::kPrefill,        Recipe::kDecode,        Recipe::kPrefillPool, Recipe::kDecode,
    Recipe::kPrefillHostile, Recipe::kDecodeHostile, Recipe::kPrefillTies, Recipe::kDecodeInvalidRow,
    Recipe::kPrefill,        Recipe::kDecode,        Recipe::kPrefillPool, Recipe::kDecodeHostile,
    Recipe::kPrefillHostile, Recipe::kDecode,        Recipe::kPrefillTies, Recipe::kDecodeInvalidRow,
    Recipe::kPrefill,        Recipe::kDecode,        Recipe::kPrefillPool, Recipe::kDecodeHostile,
};

RecipeInfo const& info(Recipe r) {
    for (RecipeInfo const& i : recipes())
        if (i.recipe == r)
            return i;
    throw std::logic_error("corpus: unknown recipe");
}

using testlib::mix;

// One drawn fixture: its fixture and regions.
struct Drawn {
    Fixture f;
    std::vector<std::string> regions;
};

// Approximate bytes of a fixture (the .npy payloads; headers and case.json add ~1.5 KiB), from the case,
// before the reference runs: the cap is checked on it.
uint64_t estimatePrefill(ref::PrefillCase const& c) {
    uint64_t const rows = uint64_t(c.batchSize) * c.seqLen, mb = uint64_t(c.seqLen + 3) / 4;
    uint64_t b = rows * (640 * 2 + ref::kIndexWidth * 4 + 4 * 128 * 2) + uint64_t(c.batchSize) * mb * 256 +
                 c.cosSin.size() * 4 + 512 + 4 * uint64_t(c.batchSize);
    if (rows * mb * 4 <= kCheapLogitsBytes)
        b += rows * mb * 4;
    if (c.hasPool)
        b += 2 * 2 * c.pool.data.size() + 4 * c.pool.pageTable.size();
    return b;
}

uint64_t estimateDecode(ref::DecodeCase const& d) {
    uint64_t const B = uint64_t(d.batchSize);
    return B * (640 * 2 + ref::kIndexWidth * 4 + 4 * 128 * 2 + uint64_t(d.maxBlocks) * 4) + d.cosSin.size() * 4 + 512 +
           2 * 2 * d.pool.data.size() + 4 * d.pool.pageTable.size() + 8 * d.splitCounters.size();
}

std::string dtypeName(ref::DType d) {
    return d == ref::DType::kHalf ? "half" : "bf16";
}

bool anyTie(std::vector<float> const& logits, int64_t stride, std::vector<std::pair<int64_t, int32_t>> const& rows) {
    for (auto const& [r, n] : rows)
        if (tiesAtRank(&logits[size_t(r * stride)], n))
            return true;
    return false;
}

// The names `hit` marks, in regionNames()' order (a fixture's `regions` field).
std::vector<std::string> hitNames(std::map<std::string, bool> const& hit) {
    std::vector<std::string> out;
    for (std::string const& n : regionNames())
        if (hit.count(n) && hit.at(n))
            out.push_back(n);
    return out;
}

// The regions of a prefill fixture (regions.h, and the properties' padded_rows / tie_at_rank_512).
std::vector<std::string> prefillRegionNames(ref::PrefillCase const& c, std::vector<float> const& logits) {
    PrefillRegions const r = prefillRegions(c);
    int32_t const S = c.seqLen, MB = (S + 3) / 4;
    bool padded = false;
    std::vector<std::pair<int64_t, int32_t>> rows; // (row, nVis) of rows with nVis > 512
    for (int32_t b = 0; b < c.batchSize; ++b) {
        int32_t const ctx = std::min(std::max(c.contextLengths[b], 0), S);
        padded |= ctx < S;
        for (int32_t t = 2051; t < ctx; ++t)
            rows.push_back({int64_t(b) * S + t, (t + 1) / 4});
    }
    std::map<std::string, bool> hit = {{"tie_at_rank_512", anyTie(logits, MB, rows)}, {"padded_rows", padded}};
    for (NamedRegion const& n : named(r))
        hit[n.name] = n.hit;
    return hitNames(hit);
}

// The regions of one decode step (regions.h on the step, and decode_stages_test's invalid_row /
// valid_at_floor_edge, the properties' tie_at_rank_512).
std::vector<std::string> decodeRegionNames(ref::DecodeCase const& d, std::vector<float> const& logits) {
    DecodeRegions const r = decodeRegions({d});
    std::vector<std::pair<int64_t, int32_t>> rows;
    for (int32_t b = 0; b < d.batchSize; ++b) {
        int32_t const c = d.contextLengths[b];
        if (ref::decodeRowValid(c, d.maxBlocks))
            rows.push_back({b, c / 4});
    }
    std::map<std::string, bool> hit = {{"tie_at_rank_512", anyTie(logits, d.maxBlocks, rows)},
                                       {"invalid_row", r.invalidRow},
                                       {"valid_at_floor_edge", r.validAtFloorEdge}};
    for (NamedRegion const& n : named(r))
        hit[n.name] = n.hit;
    return hitNames(hit);
}

template <typename Spec>
Spec sample(rc::Gen<Spec> const& g, rc::Random const& random, int size) {
    return g(random, size).value();
}

class Drawer {
public:
    Drawer(Options const& o, uint64_t seed, int size) : o_(o), random_(seed), seed_(seed), size_(size) {}

    // The fixture of `recipe`, or false when the draw is over the size cap.
    bool draw(Recipe recipe, std::string const& what, Drawn* out) {
        return recipe <= Recipe::kPrefillTies ? prefill(recipe, what, out) : decode(recipe, what, out);
    }

private:
    bool prefill(Recipe recipe, std::string const& what, Drawn* out) {
        SpecOptions so;
        so.pool = recipe == Recipe::kPrefillPool || recipe == Recipe::kPrefillHostile;
        so.hostilePool = recipe == Recipe::kPrefillHostile;
        so.tieBias = recipe == Recipe::kPrefillTies;
        so.shares = defaultShares(true); // the CPU shares of the chunk-claiming properties (the cap may redraw)
        PrefillSpec spec = sample(genPrefillSpec(so), random_, size_);
        if (!dtypeWanted(spec.act.dtype))
            return false;
        uint64_t const cap =
            spec.regime == Regime::kPageEdge ? std::max(o_.maxFixtureBytes, o_.pageEdgeBytes) : o_.maxFixtureBytes;
        if (uint64_t(spec.B) * spec.S * ref::kIndexWidth * 4 > cap)
            return false; // outIdx alone is over the cap: no need to build the case
        ref::PrefillCase c = toCase(spec);
        if (estimatePrefill(c) > cap && spec.hasPool) {
            fitPool(spec.pool, int64_t(1) << 40); // the generators' own large-pool geometry
            c = toCase(spec);
        }
        if (estimatePrefill(c) > cap)
            return false;
        out->f = fixtures::makeFixtureFromReference(c, what + ": " + describe(spec), info(recipe).contract,
                                                    provenance(), seed_, true);
        out->regions = prefillRegionNames(c, *out->f.expected.logits);
        int64_t const mb = (c.seqLen + 3) / 4;
        if (uint64_t(c.batchSize) * c.seqLen * mb * 4 > kCheapLogitsBytes)
            out->f.expected.logits.reset();
        return true;
    }

    bool decode(Recipe recipe, std::string const& what, Drawn* out) {
        DecodeChainSpec spec;
        RegimeShares noMany = defaultShares(false);
        noMany.manyBlocks = 0; // nVis > 512 is the many-blocks recipe's (its own size cap)
        uint64_t cap = o_.maxFixtureBytes;
        switch (recipe) {
        case Recipe::kDecode:
            spec = sample(genDecodeChainSpec(300, 9, true, false, noMany), random_, size_);
            break;
        case Recipe::kDecodeHostile:
            spec = sample(genDecodeChainSpec(300, 9, false, true, noMany), random_, size_);
            break;
        case Recipe::kDecodeManyBlocks: {
            RegimeShares many;
            many.manyBlocks = 100;
            spec = sample(genDecodeChainSpec(300, 9, true, false, many), random_, size_);
            cap = std::max(cap, o_.manyBlocksBytes);
            break;
        }
        default: // as Padding.InvalidDecodeRowsAreInert
            spec = sample(genDecodeChainSpec(200, 3, false, false, noMany), random_, size_);
            spec.B = std::max(spec.B, 2);
            spec.L.resize(size_t(spec.B), 5);
            break;
        }
        if (!dtypeWanted(spec.act.dtype))
            return false;
        rc::Random r = random_;
        uint64_t const pickBits = r.split().next();
        // The step: the last for nVis > 512 (L + steps >= 2052) and invalid rows (as the property), else drawn.
        int32_t const k = recipe == Recipe::kDecodeManyBlocks || recipe == Recipe::kDecodeInvalidRow
                              ? spec.steps - 1
                              : int32_t(pickBits % uint64_t(spec.steps));
        ref::DecodeCase d = stepOf(spec, k);
        if (estimateDecode(d) > cap) {
            fitPool(spec.pool, int64_t(1) << 40);
            d = stepOf(spec, k);
        }
        std::string note = " step " + std::to_string(k + 1) + " of " + std::to_string(spec.steps);
        if (recipe == Recipe::kDecodeInvalidRow) {
            // ctx / 4 == maxBlocks + 1 with and without a tail (the reader's precondition ctx >= 1 leaves out the
            // property's ctx < 1 rows); cos_sin grown to the largest ctx (the reader's precondition).
            int32_t const bad = int32_t((pickBits >> 16) % uint64_t(spec.B));
            int32_t const add[3] = {4, 5, 7};
            d.contextLengths[size_t(bad)] = 4 * d.maxBlocks + add[(pickBits >> 32) % 3];
            int32_t const maxCtx = *std::max_element(d.contextLengths.begin(), d.contextLengths.end());
            d.cosSin = makeCosSin(spec.act.rope, std::max<int32_t>(maxCtx, int32_t(d.cosSin.size() / 64)));
            note += ", row " + std::to_string(bad) + " invalid: ctx " + std::to_string(d.contextLengths[size_t(bad)]);
            if ((pickBits >> 40) & 1) { // as the property's poisoned half
                poisonRow(d.dtype, pickBits, &d.indexQk[size_t(bad) * 640]);
                note += " (input poisoned)";
            }
        }
        if (estimateDecode(d) > cap)
            return false;
        out->f = fixtures::makeFixtureFromReference(d, what + ": " + describe(spec) + note, info(recipe).contract,
                                                    provenance(), seed_, true);
        out->regions = decodeRegionNames(d, *out->f.expected.logits);
        return true;
    }

    // Step k of the chain of `spec` with the pool every earlier step left (cases.h forEachStep, by the reference).
    static ref::DecodeCase stepOf(DecodeChainSpec const& spec, int32_t k) {
        Chain ch = makeChain(spec);
        std::vector<uint16_t> pool = refPoolAfterPrefill(ch.prefillL);
        for (int32_t i = 0; i < k; ++i) {
            ch.steps[size_t(i)].pool.data = pool;
            pool = ref::runDecode(ch.steps[size_t(i)]).poolAfter;
        }
        ref::DecodeCase d = std::move(ch.steps[size_t(k)]);
        d.pool.data = std::move(pool);
        return d;
    }

    bool dtypeWanted(ref::DType dt) const { return o_.dtype == "both" || o_.dtype == dtypeName(dt); }

    static std::string provenance() { return "qsa corpus (properties/corpus.cc), generator " + generatorVersion(); }

    Options const& o_;
    rc::Random random_;
    uint64_t seed_;
    int size_;
};

uint64_t dirBytes(fs::path const& d) {
    uint64_t n = 0;
    for (auto const& e : fs::directory_iterator(d))
        if (e.is_regular_file())
            n += e.file_size();
    return n;
}

} // namespace

std::vector<std::string> const& regionNames() {
    static std::vector<std::string> const names = {"nvis_gt_512",
                                                   "tie_at_rank_512",
                                                   "chunked",
                                                   "chunk_at_t0",
                                                   "chunk_at_ctx_minus_1",
                                                   "chunk_in_padding",
                                                   "chunk_at_block_edge",
                                                   "bf16",
                                                   "tiny_subnormal_sum",
                                                   "huge",
                                                   "nonfinite_valid",
                                                   "nonfinite_padding",
                                                   "page_crossed",
                                                   "padded_rows",
                                                   "hole_used",
                                                   "out_of_plane_used",
                                                   "truncated_hit",
                                                   "block_completes",
                                                   "page_edge",
                                                   "invalid_row",
                                                   "valid_at_floor_edge",
                                                   "nonfinite_invalid_row"};
    return names;
}

std::string generatorVersion() {
    return "corpus" + std::to_string(kCorpusFormat) + "-" + corpus_gen::kSourcesHash;
}

Result writeCorpus(std::string const& out, Options const& o) {
    if (o.count < 1)
        throw std::runtime_error("qsa corpus: --count must be >= 1, got " + std::to_string(o.count));
    if (o.dtype != "half" && o.dtype != "bf16" && o.dtype != "both")
        throw std::runtime_error("qsa corpus: --dtype must be half, bf16 or both, got '" + o.dtype + "'");
    std::set<std::string> const known(regionNames().begin(), regionNames().end());
    for (std::string const& r : o.regions)
        if (!known.count(r))
            throw std::runtime_error("qsa corpus: --regions: unknown region '" + r + "' (known: see manifest.json)");
    fs::path const root(out);
    if (fs::exists(root / "manifest.json"))
        throw std::runtime_error("qsa corpus: " + out + " already holds a corpus (manifest.json); use a new directory");
    fs::create_directories(root);

    // --regions: the recipes that can reach a requested region, in cycle order.
    std::vector<Recipe> cycle;
    for (Recipe r : kCycle) {
        bool reach = o.regions.empty();
        for (std::string const& g : o.regions) {
            auto const& v = info(r).reach;
            reach |= std::find(v.begin(), v.end(), g) != v.end();
        }
        if (reach)
            cycle.push_back(r);
    }
    Result res;
    constexpr int kMaxDraws = 400; // per slot
    for (int i = 0; i < o.count; ++i) {
        Recipe const recipe = cycle[size_t(i) % cycle.size()];
        Drawn got;
        bool done = false;
        for (int a = 0; a < kMaxDraws && !done; ++a) {
            ++res.draws;
            uint64_t const seed = mix(mix(o.seed) ^ (uint64_t(i) << 20) ^ uint64_t(a));
            // The RapidCheck size decides the regime (regimeGen: size % 20) and scales arbitrary<> draws.
            int const size = int(mix(seed ^ 0x5153) % 101);
            std::string const what =
                "corpus seed=" + std::to_string(o.seed) + " #" + std::to_string(i) + " " + info(recipe).name;
            Drawer drawer(o, seed, size);
            if (!drawer.draw(recipe, what, &got))
                continue;
            bool wanted = o.regions.empty();
            for (std::string const& g : o.regions)
                wanted |= std::find(got.regions.begin(), got.regions.end(), g) != got.regions.end();
            if (!wanted)
                continue;
            got.f.regions = got.regions;
            char name[64];
            std::snprintf(name, sizeof name, "%04d_%s", i, info(recipe).name);
            fs::path const dir = root / name;
            fixtures::writeFixture(dir.string(), got.f);
            Entry e;
            e.name = name;
            e.pipeline = got.f.isDecode() ? "decode" : "prefill";
            e.dtype = dtypeName(got.f.dtype());
            e.recipe = info(recipe).name;
            e.regions = got.regions;
            e.bytes = dirBytes(dir);
            e.seed = seed;
            res.totalBytes += e.bytes;
            res.entries.push_back(std::move(e));
            done = true;
        }
        if (!done) {
            std::string want;
            for (std::string const& g : o.regions)
                want += (want.empty() ? "" : ",") + g;
            throw std::runtime_error("qsa corpus: slot " + std::to_string(i) + " (" + info(recipe).name +
                                     ") found no " + "fixture of dtype " + o.dtype +
                                     (want.empty() ? "" : " hitting " + want) + " under the size cap in " +
                                     std::to_string(kMaxDraws) + " draws");
        }
    }

    nlohmann::json m = nlohmann::json::object();
    m["schema"] = "qsa-corpus/1";
    m["seed"] = o.seed;
    m["count"] = o.count;
    m["generator_version"] = generatorVersion();
    m["dtype"] = o.dtype;
    m["regions_requested"] = o.regions;
    m["max_fixture_bytes"] = o.maxFixtureBytes;
    m["many_blocks_fixture_bytes"] = o.manyBlocksBytes;
    m["page_edge_fixture_bytes"] = o.pageEdgeBytes;
    nlohmann::json cov = nlohmann::json::array();
    for (std::string const& r : regionNames()) {
        int64_t hits = 0;
        for (Entry const& e : res.entries)
            hits += std::count(e.regions.begin(), e.regions.end(), r);
        cov.push_back({{"region", r}, {"hits", hits}});
    }
    m["coverage"] = {{"cases", res.entries.size()}, {"regions", cov}};
    nlohmann::json fx = nlohmann::json::array();
    for (Entry const& e : res.entries) {
        fx.push_back({{"name", e.name},
                      {"pipeline", e.pipeline},
                      {"dtype", e.dtype},
                      {"recipe", e.recipe},
                      {"regions", e.regions},
                      {"bytes", e.bytes},
                      {"seed", e.seed}});
    }
    m["fixtures"] = fx;
    m["fixture_bytes"] = res.totalBytes;
    std::string const text = m.dump(2) + "\n";
    fixtures::writeFiles(root.string(), {{"manifest.json", text}});
    res.totalBytes += text.size();
    return res;
}

std::string coverageLine(Result const& r, uint64_t seed) {
    size_t const n = r.entries.size();
    std::ostringstream os;
    os << "QSA_COVERAGE Corpus.seed_" << seed << " cases=" << n;
    for (std::string const& g : regionNames()) {
        int64_t hits = 0;
        for (Entry const& e : r.entries)
            hits += std::count(e.regions.begin(), e.regions.end(), g);
        os << " " << g << "=" << hits << "/" << n;
    }
    os << " floors=none check=pass";
    return os.str();
}

} // namespace corpus
} // namespace prop
} // namespace qsa

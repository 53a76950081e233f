// qsa: run, diff and replay fixtures of format qsa-fixture/1 (fixtures/README.md).
//   bazel run //tools:qsa -- run --impl=reference DIR --out OUTDIR
//   bazel run //tools:qsa -- diff A B            (output dirs or fixture dirs: a fixture contributes its expected_*)
//   bazel run //tools:qsa -- replay --impl=reference DIR...   (a corpus DIR: its fixtures, then its coverage line)
//   bazel run //tools:qsa -- replay --profile fast [--eps-r 2^-21] (--impl=reference DIR... | --outputs OUT DIR)
//   bazel run //tools:qsa -- show DIR
//   bazel run //tools:qsa -- explain DIR --row b,t [--actual OUT] [--profile fast]   (decode: --row b)
//   bazel run //tools:qsa -- corpus --count N --seed S [--regions r1,r2] [--dtype half|bf16|both] OUT
// //tools:qsa_gpu is the same tool with --impl=gpu available, and the default of run and replay: it judges the
// implementation under test (//api:impl; in the certification kit the library of --impl-lib / QSA_IMPL_LIB)
// unless --impl=reference is asked for. Exit status: 0 all good, 1 a mismatch or an invalid fixture, 2 a usage
// error or a library that cannot be used.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#ifdef QSA_GPU_TOOL
#include "api/impl_choice.h"
#endif
#include "fixtures/explain.h"
#include "fixtures/fixture.h"
#include "fixtures/impl.h"
#include "fixtures/npy.h"
#include "fixtures/replay.h"
#ifdef QSA_CORPUS
#include "properties/corpus.h"
#endif
#include "fixtures/replay_fast.h"

namespace {

namespace fs = std::filesystem;
using namespace qsa::fixtures;

// Under `bazel run` the working directory is the runfiles tree: resolve user paths against the
// directory the command was typed in.
std::string userPath(std::string const& p) {
    char const* wd = std::getenv("BUILD_WORKING_DIRECTORY");
    if (wd && !p.empty() && p[0] != '/')
        return (fs::path(wd) / p).string();
    return p;
}

// The arrays of an output directory, in the order `qsa diff` lists them.
constexpr char const* kOutputNames[] = {"kbar", "logits", "out_idx", "pool", "q_normed", "split_counters"};

// An output directory (`qsa run`) or a fixture directory (its expected_* files), as named arrays.
std::map<std::string, NpyArray> loadOutputArrays(std::string const& dir, bool* isFixture) {
    *isFixture = fs::exists(fs::path(dir) / "case.json");
    std::map<std::string, NpyArray> out;
    for (char const* name : kOutputNames) {
        fs::path p = fs::path(dir) / ((*isFixture ? std::string("expected_") : std::string()) + name + ".npy");
        if (fs::exists(p))
            out[name] = parseNpy(readBytes(p), p.string());
    }
    if (!out.count("out_idx"))
        throw std::runtime_error(dir + ": neither an output directory (out_idx.npy) nor a fixture (case.json)");
    return out;
}

Outputs toOutputs(std::map<std::string, NpyArray> const& a) {
    Outputs o;
    o.outIdx = toI32(a.at("out_idx"), "out_idx.npy");
    if (a.count("pool"))
        o.pool = toU16(a.at("pool"), "pool.npy");
    if (a.count("split_counters"))
        o.splitCounters = toI32(a.at("split_counters"), "split_counters.npy");
    if (a.count("q_normed"))
        o.qNormed = toU16(a.at("q_normed"), "q_normed.npy");
    if (a.count("kbar"))
        o.kbar = toU16(a.at("kbar"), "kbar.npy");
    if (a.count("logits"))
        o.logits = toF32(a.at("logits"), "logits.npy");
    return o;
}

std::string coords(std::vector<int64_t> const& shape, int64_t flat) {
    std::vector<int64_t> c(shape.size());
    for (size_t k = shape.size(); k-- > 0;) {
        c[k] = shape[k] ? flat % shape[k] : 0;
        flat = shape[k] ? flat / shape[k] : 0;
    }
    return shapeString(c);
}

int cmdRun(std::string const& impl, std::string const& dir, std::string const& out) {
    Fixture f = readFixture(userPath(dir));
    Outputs o = implByName(impl)(f);
    writeOutputs(userPath(out), f, o);
    std::cout << "wrote outputs of impl=" << impl << " for " << dir << " to " << out << "\n";
    return 0;
}

int cmdDiff(std::string const& a, std::string const& b) {
    bool fa = false, fb = false;
    auto A = loadOutputArrays(userPath(a), &fa);
    auto B = loadOutputArrays(userPath(b), &fb);
    if (fa || fb) {
        // A fixture on one side: the full replay report with (b, t), block sets and logits.
        Fixture f = readFixture(userPath(fa ? a : b));
        ReplayResult r = compareOutputs(f, toOutputs(fa ? B : A));
        std::cout << (r.pass ? "IDENTICAL" : "DIFFERENT") << " " << a << " vs " << b << "\n" << r.report;
        return r.pass ? 0 : 1;
    }
    bool same = true;
    for (std::string const n : kOutputNames) {
        if (!A.count(n) && !B.count(n))
            continue;
        if (!A.count(n) || !B.count(n)) {
            std::cout << n << ": only in " << (A.count(n) ? a : b) << "\n";
            same = false;
            continue;
        }
        NpyArray const &x = A.at(n), &y = B.at(n);
        if (x.dtype != y.dtype || x.shape != y.shape) {
            std::cout << n << ": " << npyDescr(x.dtype) << shapeString(x.shape) << " vs " << npyDescr(y.dtype)
                      << shapeString(y.shape) << "\n";
            same = false;
            continue;
        }
        size_t item = npyItemSize(x.dtype);
        int64_t first = -1, count = 0;
        for (size_t i = 0; i < x.data.size(); i += item)
            if (x.data.compare(i, item, y.data, i, item) != 0) {
                if (first < 0)
                    first = static_cast<int64_t>(i / item);
                ++count;
            }
        if (count) {
            same = false;
            std::cout << n << ": " << count << " elements differ, first at " << coords(x.shape, first) << "\n";
        } else {
            std::cout << n << ": identical\n";
        }
    }
    std::cout << (same ? "IDENTICAL" : "DIFFERENT") << "\n";
    return same ? 0 : 1;
}

// A corpus directory (`qsa corpus`: manifest.json, no case.json) stands for its fixtures, in the manifest's order.
struct Corpus {
    nlohmann::json manifest;
    std::vector<std::string> dirs;
};

std::vector<std::string> expandCorpora(std::vector<std::string> const& dirs, std::vector<Corpus>* corpora) {
    std::vector<std::string> out;
    for (std::string const& d : dirs) {
        fs::path const m = fs::path(userPath(d)) / "manifest.json";
        if (!fs::exists(m) || fs::exists(fs::path(userPath(d)) / "case.json")) {
            out.push_back(d);
            continue;
        }
        Corpus c;
        c.manifest = nlohmann::json::parse(readBytes(m));
        for (auto const& e : c.manifest.at("fixtures"))
            c.dirs.push_back((fs::path(d) / e.at("name").get<std::string>()).string());
        out.insert(out.end(), c.dirs.begin(), c.dirs.end());
        corpora->push_back(std::move(c));
    }
    return out;
}

// properties/coverage.h's QSA_COVERAGE line over the replayed fixtures of one corpus (hits from each fixture's
// case.json regions, in the manifest's region order), as python/qsa_fixture/__main__.py prints it; false when
// the counts disagree with the manifest's coverage.
bool printCoverage(Corpus const& c, std::map<std::string, std::vector<std::string>> const& regions) {
    int64_t n = 0;
    std::map<std::string, int64_t> hits;
    for (std::string const& d : c.dirs) {
        auto it = regions.find(d);
        if (it == regions.end())
            continue;
        ++n;
        for (std::string const& r : it->second)
            ++hits[r];
    }
    std::string wrong = c.manifest.at("coverage").at("cases").get<int64_t>() == n ? "" : "cases";
    std::ostringstream os;
    os << "QSA_COVERAGE Corpus.seed_" << c.manifest.at("seed").get<uint64_t>() << " cases=" << n;
    for (auto const& r : c.manifest.at("coverage").at("regions")) {
        std::string const name = r.at("region").get<std::string>();
        os << " " << name << "=" << hits[name] << "/" << n;
        if (r.at("hits").get<int64_t>() != hits[name])
            wrong += (wrong.empty() ? "" : ",") + name;
    }
    os << " floors=none check=" << (wrong.empty() ? "pass" : "FAIL(manifest:" + wrong + ")");
    std::cout << os.str() << "\n";
    return wrong.empty();
}

// What `qsa replay` judges: QSA_LEVELS, and --profile or else QSA_PROFILE (contract section 8); eps_r of profile
// fast: --eps-r or else QSA_FAST_EPS_R. A bad flag is a usage error (exit 2); a bad variable a std::runtime_error
// (exit 1, "qsa: <message>", as the Python CLI reports QSA_LEVELS / QSA_PROFILE).
qsa::checks::Selection replaySelection(std::string const& profile, std::string const& epsR) {
    if (!epsR.empty()) {
        qsa::ref::fast::Params p;
        try {
            p.epsR = qsa::prop::fast::parseEpsR(epsR, "--eps-r");
        } catch (std::runtime_error const& e) {
            throw CLI::ValidationError("--eps-r", e.what());
        }
        qsa::prop::fast::setParams(p);
    }
    qsa::prop::fast::params(); // QSA_FAST_EPS_R checked now, not in the middle of the fixtures
    if (profile.empty())
        return qsa::checks::selectionFromEnv();
    char const* l = std::getenv("QSA_LEVELS");
    return qsa::checks::parseSelection(l ? l : "", profile);
}

// outputsDir: the implementation's outputs were written there (`qsa run`, `python -m qsa_fixture run`); exactly
// one fixture then.
int cmdReplay(std::string const& impl, std::vector<std::string> const& given, bool verbose, std::string const& profile,
              std::string const& epsR, std::string const& outputsDir) {
    qsa::checks::Selection const sel = replaySelection(profile, epsR);
    std::vector<Corpus> corpora;
    std::vector<std::string> const dirs = expandCorpora(given, &corpora);
    std::map<std::string, std::vector<std::string>> regions; // fixture dir -> case.json regions (fixtures read)
    Impl fn;
    if (outputsDir.empty()) {
        fn = implByName(impl);
    } else {
        if (dirs.size() != 1)
            throw CLI::ValidationError("--outputs", "judges the outputs of exactly one fixture, got " +
                                                        std::to_string(dirs.size()) + " fixture directories");
        bool isFixture = false;
        Outputs const o = toOutputs(loadOutputArrays(userPath(outputsDir), &isFixture));
        fn = [o](Fixture const&) { return o; };
    }
    std::string const source = outputsDir.empty() ? "impl=" + impl : "outputs=" + outputsDir;
    int bad = 0, notJudged = 0, unjudgedChecks = 0;
    for (std::string const& d : dirs) {
        Fixture f;
        try {
            f = readFixture(userPath(d));
        } catch (std::exception const& e) {
            std::cout << "INVALID " << d << ": " << e.what() << "\n";
            ++bad;
            continue;
        }
        regions[d] = f.regions.value_or(std::vector<std::string>{});
        // Profile fast adds check Fixture.DifferentialFast (E1-E5 from the inputs); otherwise this is replay().
        ReplayResult r = replay(f, fn, sel, compareOutputsFast);
        if (!r.anyJudged) {
            ++notJudged;
            std::cout << "NOT_JUDGED " << d << " (inputs level " << r.inputLevel << ")\n";
        } else if (r.pass && r.partial) {
            ++notJudged; // a stage without its outputs is never a pass (QSA_FAST_NOT_JUDGED lines say which)
            std::cout << "NOT_JUDGED " << d << " (profile fast: stages not judged, see QSA_FAST_NOT_JUDGED)\n";
        } else {
            std::cout << (r.pass ? "PASS " : "FAIL ") << d << (r.pass ? "" : ": " + r.summary) << "\n";
        }
        for (std::string const& line : r.lines(d)) {
            unjudgedChecks += line.rfind("QSA_NOT_JUDGED", 0) == 0;
            std::cout << "  " << line << "\n";
        }
        if (!r.pass) {
            ++bad;
            if (verbose)
                std::cout << r.report;
        }
    }
    std::cout << dirs.size() - bad - notJudged << " of " << dirs.size() << " fixtures pass (" << source << ")";
    if (notJudged || unjudgedChecks)
        std::cout << "; " << notJudged << " fixtures and " << unjudgedChecks << " checks not judged (" << sel.describe()
                  << ")";
    std::cout << "\n";
    for (Corpus const& c : corpora)
        bad += !printCoverage(c, regions);
    return bad ? 1 : 0;
}

int cmdShow(std::string const& dir) {
    Fixture f = readFixture(userPath(dir));
    std::cout << dir << ": " << (f.isDecode() ? "decode" : "prefill") << " "
              << (f.dtype() == qsa::ref::DType::kHalf ? "half" : "bf16") << " B=" << f.batchSize()
              << " S=" << f.seqLen() << (f.isDecode() ? " maxBlocks=" + std::to_string(f.decode.maxBlocks) : "")
              << " pool=" << (f.hasPool() ? "yes" : "no") << "\n  description: " << f.description
              << "\n  contract: " << f.contract.value_or("-") << "  provenance: " << f.provenance.value_or("-")
              << "\n  ctx:";
    for (int32_t c : f.contextLengths())
        std::cout << " " << c;
    std::cout << "\n";
    return 0;
}

// `--row b,t` (prefill) or `--row b` (decode) as {b, t}; t = 0 for decode.
std::pair<int64_t, int64_t> parseRow(Fixture const& f, std::string const& spec) {
    size_t comma = spec.find(',');
    auto num = [&](std::string const& s) {
        size_t used = 0;
        int64_t v = -1;
        try {
            v = std::stoll(s, &used);
        } catch (std::exception const&) {
            used = 0;
        }
        if (used == 0 || used != s.size())
            throw CLI::ValidationError("--row", "'" + spec + "' is not " + (f.isDecode() ? "b" : "b,t"));
        return v;
    };
    if (f.isDecode() != (comma == std::string::npos))
        throw CLI::ValidationError("--row", "'" + spec + "': a " + (f.isDecode() ? "decode" : "prefill") +
                                                " fixture takes --row " + (f.isDecode() ? "b" : "b,t"));
    if (f.isDecode())
        return {num(spec), 0};
    return {num(spec.substr(0, comma)), num(spec.substr(comma + 1))};
}

// --actual: a fixture (its expected_out_idx.npy), an output directory of `qsa run` or an out_idx .npy file.
std::vector<int32_t> loadActualOutIdx(Fixture const& f, std::string const& where) {
    std::string const p = userPath(where);
    std::vector<int32_t> v;
    if (fs::is_directory(p)) {
        bool isFixture = false;
        v = toI32(loadOutputArrays(p, &isFixture).at("out_idx"), where + "/out_idx");
    } else {
        v = toI32(parseNpy(readBytes(p), p), p);
    }
    size_t const want = size_t(f.batchSize()) * f.seqLen() * qsa::ref::kIndexWidth;
    if (v.size() != want)
        throw std::runtime_error("--actual " + where + ": out_idx has " + std::to_string(v.size()) +
                                 " entries, expected B*S*2051 = " + std::to_string(want));
    return v;
}

// `explain --profile fast`: the row's logit intervals from the fixture's expected stage outputs or from --actual
// (a fixture or an output directory: its q_normed, kbar, pool, logits, out_idx).
int explainFast(Fixture const& f, std::string const& dir, std::string const& actualPath, int64_t b, int64_t t,
                std::string const& epsR) {
    replaySelection("fast", epsR);
    Outputs src = f.expected;
    std::string name = dir + " (expected outputs)";
    if (!actualPath.empty()) {
        if (!fs::is_directory(userPath(actualPath)))
            throw CLI::ValidationError("--actual", "--profile fast needs an output or fixture directory (its q_normed "
                                                   "and kbar), got " +
                                                       actualPath);
        bool isFixture = false;
        src = toOutputs(loadOutputArrays(userPath(actualPath), &isFixture));
        name = actualPath;
    }
    FastExplanation const e = explainRowFast(f, src, name, b, t);
    std::cout << dir << ": " << e.text;
    return e.violation ? 1 : 0;
}

int cmdExplain(std::string const& dir, std::string const& rowSpec, std::string const& actualPath, int64_t window,
               std::string const& profile, std::string const& epsR) {
    Fixture f = readFixture(userPath(dir));
    int64_t const W = qsa::ref::kIndexWidth;
    std::vector<int32_t> actual;
    if (!actualPath.empty())
        actual = loadActualOutIdx(f, actualPath);
    int64_t b = 0, t = 0;
    if (!rowSpec.empty()) {
        std::tie(b, t) = parseRow(f, rowSpec);
    } else {
        // No --row: the first row where the actual output differs from the fixture's expected one.
        int64_t const r = firstDifferentRow(actual, f.expected.outIdx);
        if (r < 0) {
            std::cout << "--actual " << actualPath << " equals the fixture's expected out_idx; give --row\n";
            return 0;
        }
        b = r / f.seqLen();
        t = r % f.seqLen();
    }
    if (profile == "fast")
        return explainFast(f, dir, actualPath, b, t, epsR);
    RowProblem const p = rowProblem(f, b, t);
    int32_t const* act = actual.empty() ? nullptr : actual.data() + (b * f.seqLen() + (f.isDecode() ? 0 : t)) * W;
    std::cout << dir << ": " << explainRow(p, act, ExplainOptions{window});
    if (!act)
        return 0;
    std::vector<int32_t> const want = contractRow(p);
    return std::equal(want.begin(), want.end(), act) ? 0 : 1;
}

#ifdef QSA_CORPUS
int cmdCorpus(qsa::prop::corpus::Options const& o, std::string const& out) {
    auto const r = qsa::prop::corpus::writeCorpus(userPath(out), o);
    std::cout << "wrote " << r.entries.size() << " fixtures (" << r.draws << " draws) to " << out << ": "
              << r.totalBytes << " bytes (" << std::fixed << std::setprecision(1) << double(r.totalBytes) / 1048576.0
              << " MiB), generator " << qsa::prop::corpus::generatorVersion() << "\n"
              << qsa::prop::corpus::coverageLine(r, o.seed) << "\n";
    return 0;
}
#endif

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"qsa: run, diff and replay QSA indexer fixtures (qsa-fixture/1)"};
    app.require_subcommand(1);
#ifdef QSA_GPU_TOOL
    std::string const defaultImpl = "gpu"; // the implementation under test, never silently the reference
    std::string implLib;
    app.add_option("--impl-lib", implLib,
                   "the shared library under test (the kit's build, --//api:impl=//api:loaded; default "
                   "$QSA_IMPL_LIB)");
    app.fallthrough(); // `qsa_gpu replay --impl-lib LIB DIR`: the option may follow the subcommand
#else
    std::string const defaultImpl = "reference";
#endif

    std::string runImpl = defaultImpl, runDir, runOut;
    auto* run = app.add_subcommand("run", "run an implementation on a fixture, write its outputs as .npy");
    run->add_option("--impl", runImpl, "reference or gpu (default " + defaultImpl + ")")
        ->check(CLI::IsMember({"reference", "gpu"}));
    run->add_option("dir", runDir, "fixture directory")->required();
    run->add_option("--out", runOut, "output directory")->required();

    std::string diffA, diffB;
    auto* diff = app.add_subcommand("diff", "compare two output directories (or a fixture's expected outputs)");
    diff->add_option("a", diffA)->required();
    diff->add_option("b", diffB)->required();

    std::string replayImpl = defaultImpl, replayProfile, replayEpsR, replayOutputs;
    std::vector<std::string> replayDirs;
    bool verbose = true;
    auto* rep = app.add_subcommand("replay", "replay fixture directories; one line per fixture");
    auto* repImpl = rep->add_option("--impl", replayImpl, "reference or gpu (default " + defaultImpl + ")")
                        ->check(CLI::IsMember({"reference", "gpu"}));
    rep->add_option("--profile", replayProfile,
                    "ieee (bit for bit), fast (E1-E5 of contract section 9) or none; "
                    "default $QSA_PROFILE, else ieee")
        ->check(CLI::IsMember({"ieee", "fast", "none"}));
    rep->add_option("--eps-r", replayEpsR,
                    "profile fast: F3's relative error, 2^-N or a float (default "
                    "$QSA_FAST_EPS_R, else 2^-21)");
    rep->add_option("--outputs", replayOutputs,
                    "judge the outputs in this directory (out_idx.npy, pool.npy, split_counters.npy, q_normed.npy, "
                    "kbar.npy, logits.npy, as `qsa run` writes them) instead of running --impl; one fixture")
        ->excludes(repImpl);
    rep->add_option("dirs", replayDirs, "fixture directories, or corpus directories (manifest.json)")->required();
    rep->add_flag("!--quiet", verbose, "only the one-line results, no mismatch reports");

    std::string showDir;
    auto* show = app.add_subcommand("show", "print a fixture's header");
    show->add_option("dir", showDir)->required();

    std::string explainDir, explainRowSpec, explainActual;
    int64_t explainWindow = -1;
    std::string explainProfile = "ieee", explainEpsR;
    auto* explain = app.add_subcommand(
        "explain", "one row's selection: the contract's order with logit bits, the kSel threshold, the ties "
                   "across it and, with --actual, which block the implementation took instead and why that is wrong");
    explain->add_option("dir", explainDir, "fixture directory")->required();
    explain->add_option("--row", explainRowSpec,
                        "b,t (prefill) or b (decode); without it, the first row where --actual differs");
    explain->add_option("--actual", explainActual,
                        "the implementation's out_idx: a fixture dir, a `qsa run` output dir or a .npy file");
    explain->add_option("--window", explainWindow, "ranks listed at the top and on each side of the threshold")
        ->check(CLI::NonNegativeNumber);
    explain
        ->add_option("--profile", explainProfile,
                     "fast: the row's logit intervals, its threshold's straddling blocks and the E1 intervals of "
                     "its q_normed (from the expected stage outputs, or --actual's)")
        ->check(CLI::IsMember({"ieee", "fast"}));
    explain->add_option("--eps-r", explainEpsR,
                        "profile fast: F3's relative error (default $QSA_FAST_EPS_R, else 2^-21)");

#ifdef QSA_CORPUS
    qsa::prop::corpus::Options corpusOpt;
    std::string corpusOut, corpusRegions;
    double corpusMaxMb = double(corpusOpt.maxFixtureBytes) / 1048576.0;
    auto* corpus = app.add_subcommand("corpus", "write N fixtures drawn by the properties' generators, expected "
                                                "outputs from the CPU reference, and OUT/manifest.json");
    corpus->add_option("--count", corpusOpt.count, "number of fixtures")->required()->check(CLI::PositiveNumber);
    corpus->add_option("--seed", corpusOpt.seed, "the corpus seed (same seed, same bytes)")->required();
    corpus->add_option("--regions", corpusRegions,
                       "comma list: keep only fixtures hitting one of these regions (and draw only the recipes "
                       "that can reach one)");
    corpus->add_option("--dtype", corpusOpt.dtype, "half, bf16 or both")
        ->check(CLI::IsMember({"half", "bf16", "both"}));
    corpus
        ->add_option("--max-fixture-mb", corpusMaxMb,
                     "redraw fixtures larger than this (MiB; the nVis > 512 decode recipe: at least 4)")
        ->check(CLI::PositiveNumber);
    corpus->add_option("out", corpusOut, "output directory (new)")->required();
#endif
    try {
        app.parse(argc, argv);
        if (*explain && explainRowSpec.empty() && explainActual.empty())
            throw CLI::RequiredError("explain: --row (or --actual)");
    } catch (CLI::ParseError const& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
#ifdef QSA_GPU_TOOL
    // Before any CUDA call (the library check forks): which implementation --impl=gpu runs, said once.
    if ((*run && runImpl == "gpu") || (*rep && replayImpl == "gpu" && replayOutputs.empty())) {
        qsa::api::ImplChoice const impl = qsa::api::chooseImpl(implLib);
        if (!impl.error.empty()) {
            std::cerr << "qsa: " << impl.error << "\n";
            return 2;
        }
        std::cerr << "qsa: implementation under test: "
                  << (impl.library.empty() ? impl.label : impl.library + " (" + impl.check + ")") << "\n";
    }
#endif
    try {
        if (*run)
            return cmdRun(runImpl, runDir, runOut);
        if (*diff)
            return cmdDiff(diffA, diffB);
        if (*rep)
            return cmdReplay(replayImpl, replayDirs, verbose, replayProfile, replayEpsR, replayOutputs);
        if (*show)
            return cmdShow(showDir);
        if (*explain)
            return cmdExplain(explainDir, explainRowSpec, explainActual, explainWindow, explainProfile, explainEpsR);
#ifdef QSA_CORPUS
        if (*corpus) {
            std::stringstream ss(corpusRegions);
            for (std::string r; std::getline(ss, r, ',');)
                if (!r.empty())
                    corpusOpt.regions.push_back(r);
            corpusOpt.maxFixtureBytes = uint64_t(corpusMaxMb * 1048576.0);
            return cmdCorpus(corpusOpt, corpusOut);
        }
#endif
    } catch (CLI::ParseError const& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    } catch (std::exception const& e) {
        std::cerr << "qsa: " << e.what() << "\n";
        return 1;
    }
    return 2;
}

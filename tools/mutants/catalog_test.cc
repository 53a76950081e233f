// //tools/mutants:catalog_test (CPU): the mutant catalog and the QSA_MUTANT hooks in kernels/ agree, and the
// production build of //kernels:qsa_kernels carries no mutant code (see README.md).
// Args: catalog.tsv, check_hooks.sh, the production archive(s) of //kernels:qsa_kernels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/qsaMutants.h"

// The production meaning of the hooks, checked at compile time (this target is built without QSA_MUTANTS,
// exactly like the default //kernels:qsa_kernels).
#if defined(QSA_MUTANTS)
#error "catalog_test must be compiled without QSA_MUTANTS"
#endif
static_assert(!QSA_MUTANT(1), "QSA_MUTANT(id) must be the constant false in the production build");
static_assert(!QSA_MUTANT(35), "QSA_MUTANT(id) must be the constant false in the production build");
static_assert(!QSA_MUTANT(36), "QSA_MUTANT(id) must be the constant false in the production build");

namespace {

int gArgc = 0;
char** gArgv = nullptr;

std::string readFile(std::string const& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << "cannot read " << path;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Mutant {
    int id;
    std::string name, file, change, story;
};

std::vector<Mutant> readCatalog() {
    std::vector<Mutant> out;
    std::istringstream in(readFile(gArgv[1]));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#')
            continue;
        std::vector<std::string> f;
        std::string cell;
        std::istringstream ls(line);
        while (std::getline(ls, cell, '\t'))
            f.push_back(cell);
        EXPECT_EQ(f.size(), 5u) << "catalog row: " << line;
        if (f.size() != 5)
            continue;
        out.push_back({std::atoi(f[0].c_str()), f[1], f[2], f[3], f[4]});
    }
    return out;
}

// The kernel sources of the data deps (runfiles paths relative to the workspace root).
std::vector<std::string> const kSources = {
    "kernels/decode_prep.cu",     "kernels/decode_scores.cu",  "kernels/decode_select.cu",
    "kernels/expand.cu",          "kernels/prefill_select.cu", "kernels/qprep_kcompress.cu",
    "kernels/qsaCommon.cuh",      "kernels/qsaMutants.h",      "kernels/qsaPrepDevice.cuh",
    "kernels/qsaRadixSelect.cuh", "kernels/runner_decode.cu",  "kernels/runner_prefill.cu",
    "kernels/scores.cu",          "kernels/sort.cu",
};

std::set<int> hookIds(std::string const& text) {
    std::set<int> ids;
    std::regex const re("QSA_MUTANT\\(([0-9]+)\\)");
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
        ids.insert(std::stoi((*it)[1]));
    return ids;
}

TEST(MutantCatalog, WellFormedAndLargeEnough) {
    std::vector<Mutant> const cat = readCatalog();
    EXPECT_GE(cat.size(), 25u) << "the mutation-testing plan (README.md) asks for at least 25 mutants";
    std::set<int> ids;
    std::set<std::string> names;
    for (Mutant const& m : cat) {
        EXPECT_GT(m.id, 0) << m.name;
        EXPECT_TRUE(ids.insert(m.id).second) << "duplicate id " << m.id;
        EXPECT_TRUE(names.insert(m.name).second) << "duplicate name " << m.name;
        EXPECT_FALSE(m.change.empty() || m.story.empty()) << "mutant " << m.id << " lacks its change or story";
        EXPECT_EQ(m.file.rfind("kernels/", 0), 0u) << "mutant " << m.id << " file " << m.file;
    }
}

TEST(MutantCatalog, EveryIdHookedInItsFileAndEveryHookCatalogued) {
    std::vector<Mutant> const cat = readCatalog();
    std::map<std::string, std::set<int>> hooksByFile;
    std::set<int> allHooks;
    for (std::string const& s : kSources) {
        hooksByFile[s] = hookIds(readFile(s));
        allHooks.insert(hooksByFile[s].begin(), hooksByFile[s].end());
    }
    std::set<int> catIds;
    for (Mutant const& m : cat) {
        catIds.insert(m.id);
        ASSERT_TRUE(hooksByFile.count(m.file)) << "mutant " << m.id << ": " << m.file << " is not a data dep";
        EXPECT_TRUE(hooksByFile[m.file].count(m.id))
            << "mutant " << m.id << " (" << m.name << "): no QSA_MUTANT(" << m.id << ") hook left in " << m.file;
    }
    for (int id : allHooks)
        EXPECT_TRUE(catIds.count(id)) << "hook QSA_MUTANT(" << id << ") in kernels/ is not in the catalog";
}

TEST(MutantCatalog, EveryLaunchingKernelFileSyncsTheMutantId) {
    for (std::string const& s : kSources) {
        std::string const text = readFile(s);
        if (s.size() > 3 && s.compare(s.size() - 3, 3, ".cu") == 0 && text.find("<<<") != std::string::npos) {
            EXPECT_NE(text.find("QSA_MUTANT_SYNC()"), std::string::npos)
                << s << " launches kernels but never calls QSA_MUTANT_SYNC(): its device hooks would see id 0";
        }
    }
    EXPECT_NE(readFile("kernels/qsaCommon.cuh").find("#include \"kernels/qsaMutants.h\""), std::string::npos);
}

TEST(MutantCatalog, CheckHooksScriptAgrees) {
    std::string cmd = std::string("bash ") + gArgv[2] + " " + gArgv[1];
    for (std::string const& s : kSources)
        cmd += " " + s;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(MutantCatalog, ProductionArchiveHasNoMutantCode) {
    ASSERT_GE(gArgc, 4) << "pass the production archive of //kernels:qsa_kernels";
    for (int i = 3; i < gArgc; ++i) {
        std::string const bytes = readFile(gArgv[i]);
        ASSERT_GT(bytes.size(), 1000u) << gArgv[i];
        // Both exist only when kernels/qsaMutants.h is compiled with QSA_MUTANTS.
        EXPECT_EQ(bytes.find("QSA_MUTANTS_BUILD"), std::string::npos)
            << gArgv[i] << " was built with --//kernels:enable_mutants=true (mutant code in the production build)";
        EXPECT_EQ(bytes.find("qsaMutantDev"), std::string::npos) << gArgv[i];
    }
}

} // namespace

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    gArgc = argc;
    gArgv = argv;
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s catalog.tsv check_hooks.sh archive...\n", argv[0]);
        return 2;
    }
    return RUN_ALL_TESTS();
}

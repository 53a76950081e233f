// //tools/mutants:catalog_test (CPU), THE catalog check: the mutant catalog and the QSA_MUTANT hooks in every
// source of kernels/ agree, every mutant has its class under profile `fast`, and the production builds of
// //kernels:qsa_kernels and :qsa_kernels_fast carry no mutant code (see README.md). Args: catalog.tsv, the kernel
// sources (//kernels:hook_sources: every .cu / .cuh / .h, so a new file is checked without editing this test),
// --archives, the production archive(s) to check (catalog_test: qsa_kernels; catalog_fast_test: qsa_kernels_fast).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
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
    std::string fastClass; // contract section 9.1: "semantic" or "rounding:F<n>" (the freedom that allows it)
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
        EXPECT_EQ(f.size(), 6u) << "catalog row: " << line;
        if (f.size() != 6)
            continue;
        out.push_back({std::atoi(f[0].c_str()), f[1], f[2], f[3], f[4], f[5]});
    }
    return out;
}

std::vector<std::string> gSources;  // kernel sources, runfiles paths relative to the workspace root
std::vector<std::string> gArchives; // production archives

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

// Contract section 9.3: every mutant is classified for profile `fast`, either semantic (it changes what section
// 9.1 keeps exact: must be killed) or rounding under one of the freedoms F1-F5 (a legal `fast` implementation:
// must not be reported). run_mutants.sh's `fast` verdicts read this column.
TEST(MutantCatalog, EveryMutantHasAFastClass) {
    std::regex const re("semantic|rounding:F[1-5]");
    int semantic = 0;
    int rounding = 0;
    for (Mutant const& m : readCatalog()) {
        EXPECT_TRUE(std::regex_match(m.fastClass, re)) << "mutant " << m.id << " (" << m.name << "): class '"
                                                       << m.fastClass << "' is neither semantic nor rounding:F1..F5";
        (m.fastClass == "semantic" ? semantic : rounding) += 1;
    }
    // Both kinds exist, or the `fast` pass could not show both strength and no false alarm.
    EXPECT_GT(semantic, 0);
    EXPECT_GT(rounding, 0);
}

TEST(MutantCatalog, EveryIdHookedInItsFileAndEveryHookCatalogued) {
    std::vector<Mutant> const cat = readCatalog();
    std::map<std::string, std::set<int>> hooksByFile;
    std::set<int> allHooks;
    for (std::string const& s : gSources) {
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
    // Kernel files built on qsaCommon.cuh (the hooked pipeline; not e.g. the benchmark's floor kernel).
    for (std::string const& s : gSources) {
        std::string const text = readFile(s);
        if (std::filesystem::path(s).extension() == ".cu" && text.find("<<<") != std::string::npos &&
            text.find("kernels/qsaCommon.cuh") != std::string::npos) {
            EXPECT_NE(text.find("QSA_MUTANT_SYNC()"), std::string::npos)
                << s << " launches kernels but never calls QSA_MUTANT_SYNC(): its device hooks would see id 0";
        }
    }
    EXPECT_NE(readFile("kernels/qsaCommon.cuh").find("#include \"kernels/qsaMutants.h\""), std::string::npos);
}

TEST(MutantCatalog, ProductionArchiveHasNoMutantCode) {
    ASSERT_FALSE(gArchives.empty()) << "pass the production archives of //kernels:qsa_kernels(_fast)";
    for (std::string const& a : gArchives) {
        std::string const bytes = readFile(a);
        ASSERT_GT(bytes.size(), 1000u) << a;
        // Both exist only when kernels/qsaMutants.h is compiled with QSA_MUTANTS.
        EXPECT_EQ(bytes.find("QSA_MUTANTS_BUILD"), std::string::npos)
            << a << " was built with --//kernels:enable_mutants=true (mutant code in the production build)";
        EXPECT_EQ(bytes.find("qsaMutantDev"), std::string::npos) << a;
    }
}

} // namespace

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    gArgv = argv;
    bool archives = false;
    for (int i = 2; i < argc; ++i) {
        std::string const a = argv[i];
        if (a == "--archives")
            archives = true;
        else
            (archives ? gArchives : gSources).push_back(a);
    }
    if (argc < 2 || gSources.empty()) {
        std::fprintf(stderr, "usage: %s catalog.tsv SOURCES... --archives ARCHIVE...\n", argv[0]);
        return 2;
    }
    return RUN_ALL_TESTS();
}

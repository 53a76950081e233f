// The registry of checks/registry.tsv and the QSA_LEVELS / QSA_PROFILE selection (see levels.h).
#include "checks/levels.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace qsa {
namespace checks {

extern char const kRegistryTsv[]; // registry.tsv, embedded by the genrule of checks/BUILD

namespace {

std::vector<std::string> split(std::string const& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep))
        out.push_back(cur);
    return out;
}

std::vector<CheckInfo> parseRegistry() {
    std::vector<CheckInfo> rows;
    std::istringstream in(kRegistryTsv);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (line.empty() || line[0] == '#')
            continue;
        std::vector<std::string> const f = split(line, '\t');
        if (f.size() != 5 || (f[1] != "core" && f[1] != "hardened") ||
            (f[2] != "none" && f[2] != "ieee" && f[2] != "fast"))
            throw std::runtime_error(
                "checks registry: line " + std::to_string(n) +
                " is not 'check<TAB>core|hardened<TAB>none|ieee|fast<TAB>contract<TAB>what': " + line);
        CheckInfo c;
        c.id = c.pattern = f[0];
        c.level = f[1];
        c.profile = f[2];
        c.contract = std::stoi(f[3]);
        c.what = f[4];
        rows.push_back(c);
    }
    return rows;
}

CheckInfo find(std::string const& suite, std::string const& name) {
    CheckInfo const* wildcard = nullptr;
    for (CheckInfo const& c : registry()) {
        if (c.pattern == suite + "." + name)
            return c;
        if (c.pattern == suite + ".*")
            wildcard = &c;
    }
    return wildcard ? *wildcard : CheckInfo{};
}

} // namespace

std::vector<CheckInfo> const& registry() {
    static std::vector<CheckInfo> const rows = parseRegistry();
    return rows;
}

CheckInfo lookup(std::string const& id) {
    size_t const dot = id.find('.');
    std::string const suite = dot == std::string::npos ? id : id.substr(0, dot);
    std::string name = dot == std::string::npos ? "" : id.substr(dot + 1);
    name = name.substr(0, name.find('/')); // "Shapes/3" -> "Shapes"
    for (std::string const& part : split(suite, '/')) {
        CheckInfo c = find(part, name);
        if (c.registered()) {
            c.id = id;
            return c;
        }
    }
    CheckInfo none;
    none.id = id;
    return none;
}

CheckInfo raisedTo(CheckInfo info, std::string const& level) {
    if (level == "hardened")
        info.level = "hardened";
    return info;
}

bool Selection::judged(CheckInfo const& c) const {
    return c.registered() && levels.count(c.level) != 0 && (c.profile == "none" || c.profile == profile);
}

std::string Selection::describe() const {
    std::string l;
    for (char const* v : {"core", "hardened"})
        if (levels.count(v))
            l += (l.empty() ? "" : ",") + std::string(v);
    return "levels=" + (l.empty() ? std::string("none") : l) + " profile=" + profile;
}

Selection parseSelection(std::string const& levels, std::string const& profile) {
    Selection s;
    s.profile = profile.empty() ? "ieee" : profile;
    if (s.profile != "ieee" && s.profile != "fast" && s.profile != "none")
        throw std::runtime_error("QSA_PROFILE must be ieee, fast or none, got '" + profile + "'");
    if (levels.empty() || levels == "all") {
        s.levels = {"core", "hardened"};
        return s;
    }
    for (std::string const& l : split(levels, ',')) {
        if (l != "core" && l != "hardened")
            throw std::runtime_error("QSA_LEVELS must be a comma list of core, hardened (or all), got '" + levels +
                                     "'");
        s.levels.insert(l);
    }
    return s;
}

Selection selectionFromEnv() {
    char const* l = std::getenv("QSA_LEVELS");
    char const* p = std::getenv("QSA_PROFILE");
    return parseSelection(l ? l : "", p ? p : "");
}

std::string tags(CheckInfo const& c) {
    if (!c.registered())
        return "level=unregistered profile=unregistered";
    return "level=" + c.level + " profile=" + c.profile + " contract=" + std::to_string(c.contract);
}

std::string notJudgedLine(CheckInfo const& c, Selection const& s) {
    return "QSA_NOT_JUDGED " + c.id + " " + tags(c) + " (selected: " + s.describe() + ")";
}

std::string failedLine(CheckInfo const& c) {
    return "QSA_CHECK_FAILED " + c.id + " " + tags(c);
}

} // namespace checks
} // namespace qsa

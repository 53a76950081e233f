#include "api/impl_choice.h"

#include <cstdlib>
#include <filesystem>

#include "api/impl_label.h"
#include "api/impl_loader.h"

namespace qsa {
namespace api {

ImplChoice chooseImpl(std::string const& cliLibrary) {
    ImplChoice c;
    c.label = kImplLabel;
    char const* env = std::getenv("QSA_IMPL_LIB");
    std::string const given = !cliLibrary.empty() ? cliLibrary : env != nullptr ? env : "";
    std::string const kit = "//api:loaded"; // this binary reaches the implementation through it
    bool const loaded =
        c.label.size() >= kit.size() && c.label.compare(c.label.size() - kit.size(), kit.size(), kit) == 0;
    if (!loaded) {
        if (!given.empty()) {
            c.error = "this binary links its implementation (" + c.label + "); --impl-lib / QSA_IMPL_LIB=" + given +
                      " needs the kit's build (--//api:impl=//api:loaded, tools/kit.sh)";
        }
        return c;
    }
    if (given.empty()) {
        c.error = "this is the certification kit's build (--//api:impl=//api:loaded): name the library under test "
                  "with --impl-lib PATH (or QSA_IMPL_LIB=PATH)";
        return c;
    }
    std::error_code ec;
    std::filesystem::path const abs = std::filesystem::absolute(given, ec);
    c.library = ec ? given : abs.lexically_normal().string();
    ProbeResult const r = probeLibrary(c.library);
    if (!r.ok) {
        c.error = r.line;
        return c;
    }
    c.check = r.line;
    setenv("QSA_IMPL_LIB", c.library.c_str(), 1);
    return c;
}

} // namespace api
} // namespace qsa

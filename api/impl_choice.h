// Which implementation a front end (certify, qsa_gpu) runs, decided once before it makes any CUDA call: the one
// linked in through //api:impl, or, in a build with --//api:impl=//api:loaded (the certification kit), the shared
// library given by --impl-lib or QSA_IMPL_LIB, checked by probeLibrary() and exported to every child as
// QSA_IMPL_LIB (absolute).
#pragma once

#include <string>

namespace qsa {
namespace api {

struct ImplChoice {
    std::string error;   // "" when usable; else the one line to print before exiting
    std::string label;   // //api:impl of this build, e.g. "@//api:loaded"
    std::string library; // the absolute library path ("" when the implementation is linked in)
    std::string check;   // probeLibrary's line for a library
};

// cliLibrary: the --impl-lib value ("" when absent; QSA_IMPL_LIB is the fallback). A library given to a binary
// whose implementation is linked in is an error (it would silently certify the linked one).
ImplChoice chooseImpl(std::string const& cliLibrary);

} // namespace api
} // namespace qsa

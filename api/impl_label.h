// The label //api:impl pointed at when this binary was built, e.g. "@//kernels:qsa_kernels".
#pragma once

namespace qsa {
namespace api {

extern char const kImplLabel[];

} // namespace api
} // namespace qsa

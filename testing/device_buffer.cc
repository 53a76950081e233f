#include "testing/device_buffer.h"

#include <sstream>

namespace qsa {
namespace testlib {

void cudaCheck(cudaError_t e, char const* what, char const* file, int line) {
    if (e != cudaSuccess) {
        std::ostringstream os;
        os << file << ":" << line << ": " << what << " failed: " << cudaGetErrorName(e) << " (" << cudaGetErrorString(e)
           << ")";
        throw std::runtime_error(os.str());
    }
}

} // namespace testlib
} // namespace qsa

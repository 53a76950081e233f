#include "testing/inputs.h"

#include <cmath>
#include <cstddef>

namespace qsa {
namespace testlib {

std::vector<float> ropeTable(double theta, int32_t rows) {
    std::vector<float> cs(static_cast<size_t>(rows) * 64);
    for (int32_t p = 0; p < rows; ++p) {
        for (int i = 0; i < 32; ++i) {
            double const angle = p * std::pow(theta, -double(i) / 32.0);
            cs[size_t(p) * 64 + i] = static_cast<float>(std::cos(angle));
            cs[size_t(p) * 64 + 32 + i] = static_cast<float>(std::sin(angle));
        }
    }
    return cs;
}

std::vector<float> identityRope(int32_t rows) {
    std::vector<float> cs(static_cast<size_t>(rows) * 64, 0.0f);
    for (int32_t p = 0; p < rows; ++p)
        for (int i = 0; i < 32; ++i)
            cs[size_t(p) * 64 + i] = 1.0f;
    return cs;
}

} // namespace testlib
} // namespace qsa

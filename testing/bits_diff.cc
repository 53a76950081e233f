// The bitwise diff reporter; see bits_diff.h.
#include "testing/bits_diff.h"

#include <cstring>
#include <iomanip>
#include <sstream>

namespace qsa {
namespace testlib {

BitsDiff findBitsDiff(void const* got, void const* want, size_t n, size_t elemBytes, BitsDiffOpts const& o) {
    auto const* g = static_cast<unsigned char const*>(got);
    auto const* w = static_cast<unsigned char const*>(want);
    size_t const width = o.rowWidth > 0 ? o.rowWidth : 1;
    BitsDiff d;
    if (!o.compared && n > 0 && std::memcmp(g, w, n * elemBytes) == 0) {
        d.compared = n; // equal (the common case) in one pass
        return d;
    }
    for (size_t r = 0; r * width < n; ++r) {
        size_t const cols = o.compared ? o.compared(r) : width;
        bool bad = false;
        for (size_t c = 0; c < cols && r * width + c < n; ++c) {
            size_t const i = r * width + c;
            ++d.compared;
            if (std::memcmp(g + i * elemBytes, w + i * elemBytes, elemBytes) == 0)
                continue;
            if (d.count++ < o.maxPrint)
                d.shown.push_back(i);
            bad = true;
        }
        d.rows += bad ? 1 : 0;
    }
    return d;
}

namespace {

// The bits of one element in hex (most significant byte first, little-endian host), then its value.
std::string showElem(unsigned char const* p, size_t elemBytes, BitsDiffOpts const& o) {
    std::ostringstream os;
    os << "0x" << std::hex;
    for (size_t b = elemBytes; b-- > 0;)
        os << "0123456789abcdef"[p[b] >> 4] << "0123456789abcdef"[p[b] & 15];
    os << std::dec;
    if (o.value == BitsValue::kInt && elemBytes == 4) {
        int32_t v;
        std::memcpy(&v, p, 4);
        os << " (" << v << ")";
    } else if (o.value == BitsValue::kFloat && elemBytes == 4) {
        float v;
        std::memcpy(&v, p, 4);
        os << " (" << std::setprecision(9) << v << ")";
    } else if (o.value == BitsValue::kT && elemBytes == 2 && o.tValue) {
        uint16_t v;
        std::memcpy(&v, p, 2);
        os << " (" << o.tValue(v) << ")";
    }
    return os.str();
}

std::string where(size_t i, BitsDiffOpts const& o) {
    if (o.rowWidth == 0)
        return "element " + std::to_string(i);
    size_t const r = i / o.rowWidth, c = i % o.rowWidth;
    return "row " + (o.rowName ? o.rowName(r) : std::to_string(r)) + ", " +
           (o.colName.empty() ? "col " : o.colName + "=") + std::to_string(c);
}

} // namespace

std::string bitsDiffReport(void const* got, void const* want, size_t n, size_t elemBytes, BitsDiffOpts const& o) {
    BitsDiff const d = findBitsDiff(got, want, n, elemBytes, o);
    if (d.count == 0)
        return "";
    auto const* g = static_cast<unsigned char const*>(got);
    auto const* w = static_cast<unsigned char const*>(want);
    std::ostringstream os;
    os << o.what << ": " << d.count << " of " << d.compared << " elements differ in bits";
    if (o.rowWidth > 0)
        os << " in " << d.rows << " rows";
    if (!o.params.empty())
        os << " [" << o.params << "]";
    for (size_t k = 0; k < d.shown.size(); ++k) {
        size_t const i = d.shown[k];
        os << (k == 0 ? "; first at " : "\n  at ") << where(i, o) << ": got "
           << showElem(g + i * elemBytes, elemBytes, o) << ", expected " << showElem(w + i * elemBytes, elemBytes, o);
    }
    return os.str();
}

} // namespace testlib
} // namespace qsa

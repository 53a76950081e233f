// The one bitwise diff reporter of the test layer (contract section 7.1: bit for bit, never a tolerance):
// elements are compared by their bytes (memcmp), so NaN payloads and the sign of zero count. A report names
// what differs, the first differing elements by row and column, both bit patterns in hex (with the value of
// a float or T element) and how many elements differ. Used by the GPU kernel tests (kernels/test_helper),
// the property stage diffs (properties/prop.cc, differential_stages_test) and fixture replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace qsa {
namespace testlib {

// How an element's value is shown next to its bits.
enum class BitsValue {
    kNone,  // bits only
    kInt,   // a signed integer of 4 bytes
    kFloat, // a float of 4 bytes
    kT,     // a 16-bit T, read by BitsDiffOpts::tValue (other sizes, or no tValue: bits only)
};

struct BitsDiffOpts {
    std::string what;                           // names what is compared (stage, slot, ...): the report starts with it
    std::string params;                         // the case's parameters, "[params]" after the count when not empty
    size_t rowWidth = 0;                        // > 0: elements are rows of rowWidth, reported as row and column
    std::function<std::string(size_t)> rowName; // a row's label (default: its index)
    std::string colName;                        // "d": columns reported as "d=5" (default "col 5")
    // The first compared(r) elements of row r are compared, the rest is not (default: all).
    std::function<size_t(size_t)> compared;
    BitsValue value = BitsValue::kNone;
    float (*tValue)(uint16_t) = nullptr; // of kT: T's exact cast to float (ref::toFloatOf(dt))
    size_t maxPrint = 1;                 // differing elements shown
};

// Rows of rowWidth elements whose 2-byte ones are T, shown by tValue (ref::toFloatOf(dt)): the kernel tests' and the
// stage properties' options.
inline BitsDiffOpts tRowOpts(std::string what, size_t rowWidth, float (*tValue)(uint16_t)) {
    BitsDiffOpts o;
    o.what = std::move(what);
    o.rowWidth = rowWidth;
    o.value = BitsValue::kT;
    o.tValue = tValue;
    return o;
}

// The differing elements of got vs want (n elements of elemBytes bytes each, under o.rowWidth / o.compared).
struct BitsDiff {
    size_t compared = 0;       // elements compared
    size_t count = 0;          // of them, differing in bits
    size_t rows = 0;           // rows (of rowWidth; 0: of one element) with a differing element
    std::vector<size_t> shown; // the flat indexes of the first min(count, maxPrint)
};
BitsDiff findBitsDiff(void const* got, void const* want, size_t n, size_t elemBytes, BitsDiffOpts const& o = {});

// "" when the n elements are equal in bits, else "<what>: <count> of <compared> elements differ in bits [in
// <rows> rows] [<params>]; first at row <r>, col <c>: got 0x.. (value), expected 0x.. (value)" and one more
// line per further element shown.
std::string bitsDiffReport(void const* got, void const* want, size_t n, size_t elemBytes, BitsDiffOpts const& o);

// The same for vectors; a size mismatch is a difference ("<what>: got <n> elements, expected <m> [<params>]").
// Elements of 4 bytes are shown as float or int32_t by their type, 2-byte ones per o.value.
template <typename E>
std::string bitsDiffReport(std::vector<E> const& got, std::vector<E> const& want, BitsDiffOpts o) {
    if (got.size() != want.size())
        return o.what + ": got " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size()) +
               (o.params.empty() ? "" : " [" + o.params + "]");
    if (sizeof(E) == 4)
        o.value = std::is_floating_point<E>::value ? BitsValue::kFloat : BitsValue::kInt;
    return bitsDiffReport(got.data(), want.data(), got.size(), sizeof(E), o);
}

} // namespace testlib
} // namespace qsa

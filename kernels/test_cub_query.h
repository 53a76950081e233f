// CUB's own temp-bytes query for the prefill runner's chunk sort, written in the tests independently of
// the kernels: DeviceSegmentedRadixSort::SortPairsDescending over a DoubleBuffer (as the runner
// sorts) of numRows segments x numBlocks FP32 keys / INT32 values. Needs a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qsa {
namespace ktest {

size_t cubDoubleBufferSortQuery(int32_t numRows, int32_t numBlocks);

} // namespace ktest
} // namespace qsa

// See test_cub_query.h.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <stdexcept>
#include <string>

#include "kernels/test_cub_query.h"

namespace qsa {
namespace ktest {

size_t cubDoubleBufferSortQuery(int32_t numRows, int32_t numBlocks) {
    cub::DoubleBuffer<float> keys(nullptr, nullptr);
    cub::DoubleBuffer<int32_t> values(nullptr, nullptr);
    size_t bytes = 0;
    // A query only: CUB reads neither the buffers nor the offsets.
    cudaError_t e = cub::DeviceSegmentedRadixSort::SortPairsDescending(
        nullptr, bytes, keys, values, numRows * numBlocks, numRows, static_cast<int const*>(nullptr),
        static_cast<int const*>(nullptr));
    if (e != cudaSuccess)
        throw std::runtime_error(std::string("cubDoubleBufferSortQuery: ") + cudaGetErrorString(e));
    return bytes;
}

} // namespace ktest
} // namespace qsa

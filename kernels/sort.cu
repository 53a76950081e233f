// idsFill and the prefill sort (contract sections 4-5): CUB DeviceSegmentedRadixSort::SortPairsDescending,
// stable, values = ascending block ids, so equal logits keep ascending id order.
#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <climits>

#include "kernels/qsaCommon.cuh"
#include "kernels/qsaInternal.h"

namespace trt_edgellm {
namespace kernel {
namespace qsa_detail {
namespace {

__global__ void idsFillKernel(int32_t* ids, int64_t numRows, int32_t numBlocks) {
    int64_t const n = numRows * numBlocks;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        ids[i] = static_cast<int32_t>(i % numBlocks);
    }
}

// Segment i covers [i * numBlocks, i * numBlocks + numBlocks): whole rows.
struct RowBegin {
    int32_t numBlocks;
    __host__ __device__ int operator()(int i) const { return i * numBlocks; }
};
struct RowEnd {
    int32_t numBlocks;
    __host__ __device__ int operator()(int i) const { return i * numBlocks + numBlocks; }
};

// The workspace query's segments (contract section 6: one chunk of Rc rows x MB, DoubleBuffer form): segment
// i (row rowBegin + i) ends at begin + kSel(row). The runner no longer sorts with CUB; the query keeps the
// CUB temp slot of the layout exactly as before.
struct RowVisibleEnd {
    int32_t numBlocks;
    int32_t seqLen;
    int64_t rowBegin;
    int32_t const* contextLengths;
    __device__ int operator()(int i) const {
        int64_t const r = rowBegin + i;
        int64_t const b = r / seqLen;
        int const t = static_cast<int>(r - b * seqLen);
        int const ctx = clampCtx(contextLengths[b], seqLen);
        int const nVis = t < ctx ? (t + 1) / 4 : 0;
        return i * numBlocks + min(nVis, kTopK);
    }
};

using BeginIt = thrust::transform_iterator<RowBegin, thrust::counting_iterator<int>>;
using EndIt = thrust::transform_iterator<RowEnd, thrust::counting_iterator<int>>;
using VisEndIt = thrust::transform_iterator<RowVisibleEnd, thrust::counting_iterator<int>>;

void checkCub(char const* fn, cudaError_t e) {
    if (e != cudaSuccess) {
        fail(fn, "CUB call failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
    }
}

void checkItems(char const* fn, int64_t numRows, int64_t numBlocks) {
    if (numRows * numBlocks > INT_MAX) {
        fail(fn, "numRows * numBlocks must fit CUB's int item count, got ", numRows, " * ", numBlocks);
    }
}

} // namespace

size_t sortDoubleBufferTempBytes(int64_t numRows, int64_t numBlocks) {
    char const* fn = "sortDoubleBufferTempBytes";
    checkItems(fn, numRows, numBlocks);
    int const n = static_cast<int>(numRows * numBlocks);
    int const rows = static_cast<int>(numRows);
    cub::DoubleBuffer<float> keys(nullptr, nullptr);
    cub::DoubleBuffer<int32_t> values(nullptr, nullptr);
    thrust::counting_iterator<int> c(0);
    size_t bytes = 0;
    RowVisibleEnd endOp{static_cast<int32_t>(numBlocks), 1, 0, nullptr};
    checkCub(fn, cub::DeviceSegmentedRadixSort::SortPairsDescending(
                     nullptr, bytes, keys, values, n, rows, BeginIt(c, RowBegin{static_cast<int32_t>(numBlocks)}),
                     VisEndIt(c, endOp)));
    return bytes;
}

} // namespace qsa_detail

using namespace qsa_detail;

void launchQsaIdsFill(int32_t* ids, int32_t numRows, int32_t numBlocks, cudaStream_t stream) {
    QSA_MUTANT_SYNC();
    char const* fn = "launchQsaIdsFill";
    requirePtr(fn, "ids", ids);
    requirePositive(fn, "numRows", numRows);
    requirePositive(fn, "numBlocks", numBlocks);
    idsFillKernel<<<gridFor(static_cast<int64_t>(numRows) * numBlocks, 256, 1 << 20), 256, 0, stream>>>(ids, numRows,
                                                                                                        numBlocks);
    checkLaunch(fn);
}

size_t getQsaSortTempBytes(int32_t numRows, int32_t numBlocks) {
    char const* fn = "getQsaSortTempBytes";
    requirePositive(fn, "numRows", numRows);
    requirePositive(fn, "numBlocks", numBlocks);
    checkItems(fn, numRows, numBlocks);
    thrust::counting_iterator<int> c(0);
    size_t bytes = 0;
    checkCub(fn, cub::DeviceSegmentedRadixSort::SortPairsDescending(
                     nullptr, bytes, static_cast<float const*>(nullptr), static_cast<float*>(nullptr),
                     static_cast<int32_t const*>(nullptr), static_cast<int32_t*>(nullptr), numRows * numBlocks, numRows,
                     BeginIt(c, RowBegin{numBlocks}), EndIt(c, RowEnd{numBlocks})));
    return bytes;
}

void launchQsaSortRows(float const* keysIn, float* keysOut, int32_t const* valuesIn, int32_t* valuesOut,
                       int32_t numRows, int32_t numBlocks, void* cubTemp, size_t cubTempBytes, cudaStream_t stream) {
    char const* fn = "launchQsaSortRows";
    requirePtr(fn, "keysIn", keysIn);
    requirePtr(fn, "keysOut", keysOut);
    requirePtr(fn, "valuesIn", valuesIn);
    requirePtr(fn, "valuesOut", valuesOut);
    requirePtr(fn, "cubTemp", cubTemp);
    requirePositive(fn, "numRows", numRows);
    requirePositive(fn, "numBlocks", numBlocks);
    size_t const need = getQsaSortTempBytes(numRows, numBlocks);
    if (cubTempBytes < need) {
        fail(fn, "cubTempBytes ", cubTempBytes, " is below the required ", need);
    }
    thrust::counting_iterator<int> c(0);
    size_t bytes = cubTempBytes;
    // Whole rows, invisible entries included; keysIn / valuesIn are left as they were.
    checkCub(fn, cub::DeviceSegmentedRadixSort::SortPairsDescending(
                     cubTemp, bytes, keysIn, keysOut, valuesIn, valuesOut, numRows * numBlocks, numRows,
                     BeginIt(c, RowBegin{numBlocks}), EndIt(c, RowEnd{numBlocks}), 0, 32, stream));
    checkLaunch(fn);
}

} // namespace kernel
} // namespace trt_edgellm

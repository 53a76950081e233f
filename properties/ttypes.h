// CUDA's 2-byte activation types, the T of the API's template instantiations. The harness and the reference
// implementation pass T only through pointers (bit patterns as uint16_t).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

// CUDA's 2-byte activation types, declared only: the harness and the reference implementation pass T
// through pointers (bit patterns as uint16_t), so they need the names (for the API's template
// instantiations) but not the CUDA headers that define them.
#pragma once

struct __half;
struct __nv_bfloat16;

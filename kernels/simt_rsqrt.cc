// simt's __frsqrt_rn (testing/simt.h) is the reference's correctly rounded 1/sqrt: the same bits as the GPU's
// (//tools:exhaustive_primitives compares the two over all 2^32 floats). The simt kernel tests' bit-exactness
// rests on it (K1a, K1b and B1 normalize with __frsqrt_rn).
#include "reference/numerics.h"
#include "testing/simt.h"

float __frsqrt_rn(float x) {
    return qsa::ref::rsqrtRn(x);
}

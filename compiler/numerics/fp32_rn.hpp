// compiler/numerics/fp32_rn.hpp — fp32 arithmetic with every operation rounded exactly once.
//
// Internal to compiler/numerics. The NVFP4 and four-over-six references (docs/numerics.md §4) are
// bitwise contracts on an fp32 *order of operations*: each op is one __fmul_rn / __fdiv_rn /
// __fadd_rn. A C++ compiler may contract `a * b + c` into one fused multiply-add (GCC's default in
// the gnu++ dialects is -ffp-contract=fast, and GCC ignores `#pragma STDC FP_CONTRACT OFF`), and on
// x87 it may keep excess precision. Both would change the last bit at exactly the ties these
// references exist to pin. Routing each result through a volatile float forces the rounding to
// fp32 and makes the value opaque to contraction, whatever the flags or the target.
//
// Invariant: every function here is IEEE binary32 round-to-nearest-even of the exact result.
//
//   float s = kiln::numerics::fp32::mul(amax_b, kiln::numerics::fp32::mul(s_enc, kOneSixth));
#pragma once

#include <cmath>

namespace kiln::numerics::fp32 {

inline float rounded(float v) {
  volatile float r = v;
  return r;
}
inline float mul(float a, float b) { return rounded(a * b); }
inline float div(float a, float b) { return rounded(a / b); }
inline float add(float a, float b) { return rounded(a + b); }
inline float sub(float a, float b) { return rounded(a - b); }
// C fminf: a NaN operand is ignored (as CUDA's fminf), so fmin(NaN, FLT_MAX) == FLT_MAX.
inline float fmin(float a, float b) { return std::fmin(a, b); }

}  // namespace kiln::numerics::fp32

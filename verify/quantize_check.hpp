// verify/quantize_check.hpp — run a quantize plan on fresh random inputs and compare every code and
// scale bit with kiln's CPU references (compiler/numerics), optionally timing it.
//
// The quantize family's contract is bitwise (docs/numerics.md; templates/kernels/quantize.cuh), so the
// check is too: codes, block scales (E8M0 / UE4M3 bytes, f32 bits) and the NVFP4 global scale must
// equal the reference exactly. Inputs are drawn in a's format (bf16 / f16 / f32) with magnitudes
// spread over many binades per row and per block, whole zero blocks, values at the E4M3 / E2M1
// rounding midpoints and tiny values whose scaled codes are subnormal; outputs are poisoned (0xFF)
// before the run. Used by the gpu tier and `kiln run --check` for quantize specs.
//
//   QuantizeCheckOptions o; o.m = 4096;
//   KILN_ASSIGN_OR_RETURN(QuantizeCheckReport r, kiln::run_quantize_check(*rt, plan, o));
//   // r.code_mismatches == 0 && r.scale_mismatches == 0 && r.global_mismatch == false
#pragma once

#include <cstdint>
#include <string>

#include "kiln/kiln.hpp"

namespace kiln {

struct QuantizeCheckOptions {
  int64_t m = 1;        // rows of X
  uint64_t seed = 0;    // 0: from the clock (reported back)
  bool check = true;
  bool time = false;    // CUDA events, median of `repeats` after `warmup`
  int warmup = 3;
  int repeats = 20;
};

struct QuantizeCheckReport {
  uint64_t seed = 0;
  int64_t m = 0, k = 0;
  bool checked = false;
  int64_t codes = 0, code_mismatches = 0;    // bytes of out (fp4: two codes per byte)
  int64_t scales = 0, scale_mismatches = 0;  // scale elements
  bool global_mismatch = false;              // nvfp4: the global decode scale
  std::string first_mismatch;                // where and what, when any
  bool passed = false;
  double median_ms = 0;
  double gbps = 0;  // bytes read (X) + written (codes, scales) over the median time
  std::string to_json() const;
};

StatusOr<QuantizeCheckReport> run_quantize_check(Runtime& rt, const Plan& plan, const QuantizeCheckOptions& opts);

}  // namespace kiln

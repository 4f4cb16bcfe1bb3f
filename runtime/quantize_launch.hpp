// runtime/quantize_launch.hpp — launching the quantize family: one launch per phase of the spec
// (compiler/plan/quantize_plan.hpp), all on the caller's stream, nothing allocated, graph-safe.
//
//   // in Plan::run, for KernelFamily::kQuantize:
//   KILN_ASSIGN_OR_RETURN(CheckedQuantize q, check_quantize_operands(spec, sizes, ops));
//   return quantize_launch(*d, *k, plan_rule, sizes.k, q, stream);
#pragma once

#include "runtime/driver/driver.hpp"
#include "runtime/operands.hpp"
#include "runtime/runtime_impl.hpp"

namespace kiln {

Status quantize_launch(const Driver& d, const LoadedKernel& k, const LaunchRule& rule, int64_t k_cols,
                       const CheckedQuantize& q, CUstream stream);

}  // namespace kiln

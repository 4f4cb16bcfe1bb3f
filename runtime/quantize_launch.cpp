// runtime/quantize_launch.cpp — the quantize family's launches (quantize_launch.hpp).
#include "runtime/quantize_launch.hpp"

#include <string>

#include "templates/common/quantize_params.cuh"

namespace kiln {

Status quantize_launch(const Driver& d, const LoadedKernel& k, const LaunchRule& rule, int64_t k_cols,
                       const CheckedQuantize& q, CUstream stream) {
  kiln_dev::QuantizeParams p{};
  p.in = q.in;
  p.out = q.out;
  p.scale = q.scale;
  p.global = q.global;
  p.ld_in = q.ld_in;
  p.ld_out = q.ld_out;
  p.ld_scale = q.ld_scale;
  p.m = static_cast<int>(q.m);
  p.k = static_cast<int>(k_cols);
  p.group_rows = q.group_rows;
  p.experts = q.experts;
  p.max_m = q.max_m;
  p.out_cols = static_cast<int>(q.out_cols);
  p.masked = q.masked ? 1 : 0;
  for (int i = 0; i < rule.phase_count; ++i) {
    const int phase = rule.phases[static_cast<size_t>(i)].phase;
    // M = 0: nothing to read or write, but a tensor-scale spec still gets its scale (amax 0), and a
    // per-column copy padded past M its zero codes.
    if (q.m == 0 && (phase == kiln_dev::kPhaseAmax ||
                     (phase == kiln_dev::kPhaseQuantize && !(q.columns && q.out_cols > 0))))
      continue;
    p.phase = phase;
    const LaunchShape ls = rule.phase_shape(q.m, phase);
    void* args[] = {&p};
    const CUresult r = d.cuLaunchKernel(reinterpret_cast<CUfunction>(k.kernel), ls.grid_x, ls.grid_y, ls.grid_z,
                                        ls.block_x, 1, 1, ls.dynamic_smem, stream, args, nullptr);
    // The message is built on failure only (this is the dispatch path).
    if (r != CUDA_SUCCESS)
      return d.check(r, ("cuLaunchKernel(quantize phase " + std::to_string(phase) + ")").c_str());
  }
  return Status::Ok();
}

}  // namespace kiln

// The GEMM of each pass (gemm_view.hpp).
#include "compiler/plan/gemm_view.hpp"

namespace kiln {

GemmView gemm_view(Pass pass, const ProblemSizes& s) {
  GemmView v;
  switch (pass) {
    case Pass::kFprop:
      v.m = s.m, v.n = s.n, v.k = s.k;
      break;
    case Pass::kDgrad:
      v.m = s.m, v.n = s.k, v.k = s.n;
      v.b_mn_major = true;
      break;
    case Pass::kWgrad:
      v.m = s.n, v.n = s.k, v.k = s.m;
      v.a_mn_major = v.b_mn_major = true;
      v.m_is_reduction = true;
      break;
  }
  return v;
}

bool wgrad_reads_columnwise(const KernelSpec& spec) {
  return spec.pass == Pass::kWgrad && !format_is_high_precision(spec.a.format);
}

bool dgrad_reads_w_copy(const KernelSpec& spec) {
  if (spec.pass != Pass::kDgrad) return false;
  const bool mx = spec.a.format == Format::kMxfp8 && spec.b.format == Format::kMxfp8;
  const bool per_channel = format_is_fp8(spec.a.format) && format_is_fp8(spec.b.format) && spec.b.scale == ScaleGranularity::kN;
  return mx || per_channel;
}

bool dgrad_reads_transposed_w(const KernelSpec& spec) {
  return spec.pass == Pass::kDgrad && !format_is_high_precision(spec.a.format) && !dgrad_reads_w_copy(spec);
}

bool backward_runs_forward_gemm(const KernelSpec& spec) {
  if (dgrad_reads_w_copy(spec)) return true;
  if (!wgrad_reads_columnwise(spec)) return false;
  const bool mx = spec.a.format == Format::kMxfp8 && spec.b.format == Format::kMxfp8;
  // FP8 with a tensor or per-row scale on each copy: dYᵀ [N, M] (a: tensor | m) and Xᵀ [K, M] (b: tensor | n).
  const bool rows = format_is_fp8(spec.a.format) && format_is_fp8(spec.b.format) &&
                    (spec.a.scale == ScaleGranularity::kTensor || spec.a.scale == ScaleGranularity::kM) &&
                    (spec.b.scale == ScaleGranularity::kTensor || spec.b.scale == ScaleGranularity::kN);
  return mx || rows;
}

GemmView gemm_view(const KernelSpec& spec, const ProblemSizes& s) {
  GemmView v = gemm_view(spec.pass, s);
  if (wgrad_reads_columnwise(spec)) v.a_mn_major = v.b_mn_major = false;
  if (dgrad_reads_transposed_w(spec) || dgrad_reads_w_copy(spec)) v.b_mn_major = false;
  return v;
}

PassShapes pass_shapes(const KernelSpec& spec, const ProblemSizes& s) {
  if (wgrad_reads_columnwise(spec)) return PassShapes{{s.n, s.m}, {s.k, s.m}, {s.n, s.k}};
  if (dgrad_reads_w_copy(spec)) return PassShapes{{s.m, s.n}, {s.k, s.n}, {s.m, s.k}};
  return pass_shapes(spec.pass, s);
}

PassShapes pass_shapes(Pass pass, const ProblemSizes& s) {
  switch (pass) {
    case Pass::kFprop: return PassShapes{{s.m, s.k}, {s.n, s.k}, {s.m, s.n}};
    case Pass::kDgrad: return PassShapes{{s.m, s.n}, {s.n, s.k}, {s.m, s.k}};
    case Pass::kWgrad: return PassShapes{{s.m, s.n}, {s.m, s.k}, {s.n, s.k}};
  }
  return PassShapes{};
}

}  // namespace kiln

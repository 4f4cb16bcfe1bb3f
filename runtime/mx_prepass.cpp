// runtime/mx_prepass.cpp — MXFP8 at large M through a bf16 pre-pass (mx_prepass.hpp).
#include "runtime/mx_prepass.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/sm90_launch.hpp"
#include "templates/common/mx_dequant_params.cuh"

namespace kiln {

StatusOr<bool> mx_prepass_applies(const PlanImpl& p, const CheckedOperands& c, const void* workspace,
                                  size_t workspace_bytes) {
  if (!p.prepass_gemm || workspace == nullptr) return false;
  const int64_t need = p.prepass_layout.bytes(c.m);
  if (need <= 0 || workspace_bytes < static_cast<size_t>(need)) return false;
  // The bf16 kernel must need no workspace of its own (split-K: only from a user's tuning or pin at
  // these M): the caller's holds the copies, and the plan's own would break graph capture.
  if (p.prepass_gemm->configs[bucket_index(rows_per_expert(p.spec, c.m))].split_k > 1) return false;
  // 16-byte loads of codes: bases and row strides (bytes = elements for e4m3) 16-byte aligned.
  const auto misaligned = [](const void* ptr, int64_t ld) {
    return ((reinterpret_cast<uintptr_t>(ptr) | static_cast<uintptr_t>(ld)) & 15) != 0;
  };
  if (misaligned(c.a, c.lda) || misaligned(c.b, c.ldb)) return false;
  if ((reinterpret_cast<uintptr_t>(workspace) & 15) != 0)
    return InvalidArgument("Plan::run: the MXFP8 pre-pass workspace at " +
                           std::to_string(reinterpret_cast<uintptr_t>(workspace)) +
                           " is not 16-byte aligned (cuMemAlloc and torch allocations are)");
  return true;
}

StatusOr<LoadedKernel*> mx_prepass_convert_kernel(const PlanImpl& p, int device, CUstream stream,
                                                  bool in_run) {
  LoadedKernel* k = p.prepass_convert.load(std::memory_order_acquire);
  if (k == nullptr) {
    KILN_ASSIGN_OR_RETURN(const Driver* d, p.rt->driver());
    if (in_run) KILN_RETURN_IF_ERROR(not_capturing(*d, stream, "the MXFP8 pre-pass kernel"));
    KILN_ASSIGN_OR_RETURN(
        k, p.rt->load(p.prepass_convert_spec, KernelFamily::kMxDequant, TileConfig{}, p.arch));
    p.prepass_convert.store(k, std::memory_order_release);
  }
  KILN_RETURN_IF_ERROR(p.rt->prepare_on_device(k, device));
  return k;
}

Status mx_prepass_run(const PlanImpl& p, const CheckedOperands& c, const Operands& ops, void* workspace,
                      CUstream stream) {
  const Driver& d = **p.rt->driver();
  const ProblemSizes sizes{c.m, p.sizes.n, p.sizes.k};
  KILN_ASSIGN_OR_RETURN(LoadedKernel * k, mx_prepass_convert_kernel(p, c.device, stream, /*in_run=*/true));
  // The first 1 MiB stays untouched: a caller's workspace may also serve the plan's split-K buckets.
  uint8_t* ws = static_cast<uint8_t*>(workspace) + p.prepass_layout.a_offset();
  uint8_t* ws_b = static_cast<uint8_t*>(workspace) + p.prepass_layout.b_offset(c.m);
  kiln_dev::MxDequantParams mp{};
  // X: c.m rows (grouped: every expert's, masked E x max_m with one row stride); W: E x N rows, expert by
  // expert (check_operands' strides are elements, which for e4m3 codes and E8M0 scales are bytes).
  const int64_t experts = p.spec.op == Op::kGroupedGemm ? p.spec.experts : 1;
  const int64_t kk = sizes.k;
  mp.job[0] = {c.a, c.a_scale, ws, c.m, c.lda, c.lds_a, c.m, 0, 0, 0, 0};
  mp.job[0].dense = c.lda == kk && c.lds_a == kk / 32;
  const int64_t gb = experts > 1 ? c.b_expert_stride : sizes.n * c.ldb;
  const int64_t gs = experts > 1 ? c.b_scale_expert_stride : sizes.n * c.lds_b;
  mp.job[1] = {c.b, c.b_scale, ws_b, experts * sizes.n, c.ldb, c.lds_b, sizes.n, gb, gs, 0, 0};
  mp.job[1].dense = c.ldb == kk && c.lds_b == kk / 32 && gb == sizes.n * kk && gs == sizes.n * (kk / 32);
  mp.k = kk;
  // One thread per 8-element unit, at most as many CTAs as the SMs hold at once (its registers decide:
  // 65536 per SM, at most 8 CTAs of 256 threads); the kernel walks the rest grid-stride.
  LaunchShape ls = p.prepass_convert_launch.shape(c.m);
  KILN_ASSIGN_OR_RETURN(int sms, sm90_sm_count(d, c.device, p.arch.sm_cap));
  const int regs = std::max(k->compiled.registers, 1);
  const int per_sm = std::clamp(65536 / (regs * static_cast<int>(ls.block_x)), 1, 8);
  ls.grid_x = std::min<unsigned>(ls.grid_x, static_cast<unsigned>(per_sm * sms));
  void* args[] = {&mp};
  KILN_RETURN_IF_ERROR(launch_kernel(d, reinterpret_cast<CUfunction>(k->kernel), ls, stream, args,
                                     /*pdl=*/true, "cuLaunchKernelEx(mx_dequant)"));
  // The bf16 GEMM on the copies, shaped like the caller's X ([M, K]; masked [E, max_m, K]) and W ([N, K];
  // grouped [E, N, K]) but contiguous; everything else (output, offsets / counts, epilogue vectors) as the
  // caller gave it.
  int64_t shape_a[3] = {0, 0, 0}, shape_b[3] = {experts, sizes.n, kk};
  DLTensor a{}, b{};
  a.ndim = ops.a->ndim;
  for (int d = 0; d < a.ndim && d < 3; ++d) shape_a[d] = ops.a->shape[d];
  a.data = ws;
  b.data = ws_b;
  a.device = b.device = DLDevice{kDLCUDA, c.device};
  b.ndim = p.spec.op == Op::kGroupedGemm ? 3 : 2;
  a.shape = shape_a;
  b.shape = b.ndim == 3 ? shape_b : shape_b + 1;
  a.dtype = b.dtype = DLDataType{kDLBfloat, 16, 1};
  Operands bf = ops;
  bf.a = &a;
  bf.b = &b;
  bf.a_scale = bf.b_scale = nullptr;
  return run_plan(*p.prepass_gemm, bf, nullptr, 0, stream);
}

}  // namespace kiln

// runtime/dgrad_transpose.cpp — a quantized dgrad's pre-pass (dgrad_transpose.hpp).
#include "runtime/dgrad_transpose.hpp"

#include <cstdint>
#include <string>

#include "runtime/sm90_launch.hpp"
#include "templates/common/transpose_params.cuh"

namespace kiln {

StatusOr<LoadedKernel*> dgrad_transpose_kernel(const PlanImpl& p, int device, CUstream stream, bool in_run) {
  LoadedKernel* k = p.transpose_kernel.load(std::memory_order_acquire);
  if (k == nullptr) {
    KILN_ASSIGN_OR_RETURN(const Driver* d, p.rt->driver());
    if (in_run) KILN_RETURN_IF_ERROR(not_capturing(*d, stream, "the dgrad transpose kernel"));
    KILN_ASSIGN_OR_RETURN(k, p.rt->load(p.spec, KernelFamily::kFp8Transpose, TileConfig{}, p.arch));
    p.transpose_kernel.store(k, std::memory_order_release);
  }
  KILN_RETURN_IF_ERROR(p.rt->prepare_on_device(k, device));
  return k;
}

Status dgrad_transpose_run(const PlanImpl& p, const CheckedOperands& c, void* region, CUstream stream,
                           kiln_dev::GemmParams& gp) {
  const TransposedWLayout& l = p.transposed_w;
  const bool grouped = p.spec.op == Op::kGroupedGemm;
  // Element strides are bytes for 8-bit codes.
  const auto misaligned = [](int64_t v) { return (v & 15) != 0; };
  if (misaligned(static_cast<int64_t>(reinterpret_cast<uintptr_t>(c.b))) || misaligned(c.ldb) ||
      (grouped && misaligned(c.b_expert_stride)))
    return InvalidArgument("operand b (W): a quantized dgrad reads W in 16-byte pieces to transpose it; its base "
                           "address, row stride (" + std::to_string(c.ldb) + " bytes)" +
                           (grouped ? " and expert stride (" + std::to_string(c.b_expert_stride) + " bytes)"
                                          : std::string()) +
                           " must be multiples of 16");
  const Driver& d = **p.rt->driver();
  KILN_ASSIGN_OR_RETURN(LoadedKernel * k, dgrad_transpose_kernel(p, c.device, stream, /*in_run=*/true));
  uint8_t* codes = static_cast<uint8_t*>(region);
  uint8_t* scales = codes + l.scales_offset();
  kiln_dev::TransposeParams tp{};
  tp.src = c.b;
  tp.dst = codes;
  tp.rows = l.n;
  tp.cols = l.k;
  tp.ld_src = c.ldb;
  tp.src_expert = grouped ? c.b_expert_stride : 0;
  tp.scale_bytes = l.scale_bytes;
  if (l.scale_bytes > 0) {
    tp.src_scale = c.b_scale;
    tp.dst_scale = scales;
    tp.lds_src = c.lds_b;
    tp.src_scale_expert = grouped ? c.b_scale_expert_stride : 0;
  }
  const LaunchShape ls = l.shape();
  void* args[] = {&tp};
  KILN_RETURN_IF_ERROR(launch_kernel(d, reinterpret_cast<CUfunction>(k->kernel), ls, stream, args, /*pdl=*/true,
                                     "cuLaunchKernelEx(fp8_transpose)"));
  // The GEMM's B: Wᵀ [E, K, N], dense; block scales [E, K/128, ceil(N/128)]; tensor scales as given.
  gp.b = codes;
  gp.ldb = l.n;
  gp.b_expert_stride = grouped ? l.n * l.k : 0;
  if (l.scale_bytes > 0) {
    gp.b_scale = reinterpret_cast<const float*>(scales);
    gp.lds_b = l.n_blocks();
    gp.b_scale_expert_stride = grouped ? l.n_blocks() * l.k_blocks() : 0;
  }
  return Status::Ok();
}

}  // namespace kiln

// runtime/mx_prepass.cpp — MXFP8 at large M through a bf16 pre-pass (mx_prepass.hpp).
#include "runtime/mx_prepass.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "compiler/plan/sm90_plan.hpp"
#include "runtime/sm90_launch.hpp"
#include "templates/common/mx_dequant_params.cuh"

namespace kiln {

StatusOr<bool> mx_prepass_applies(const PlanImpl& p, const CheckedOperands& c, const void* workspace,
                                  size_t workspace_bytes) {
  if (!p.prepass_gemm || workspace == nullptr) return false;
  const int64_t need = sm90_mx_prepass_workspace_bytes(p.spec, p.arch, {c.m, p.sizes.n, p.sizes.k});
  if (need <= 0 || workspace_bytes < static_cast<size_t>(need)) return false;
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

StatusOr<LoadedKernel*> mx_prepass_convert_kernel(const PlanImpl& p, int device, CUstream stream) {
  LoadedKernel* k = p.prepass_convert.load(std::memory_order_acquire);
  if (k == nullptr) {
    KILN_ASSIGN_OR_RETURN(const Driver* d, p.rt->driver());
    if (stream != nullptr) {
      CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
      KILN_RETURN_IF_ERROR(d->check(d->cuStreamIsCapturing(stream, &capture), "cuStreamIsCapturing"));
      if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
        return NotReady(
            "Plan::run during CUDA-graph capture, but the MXFP8 pre-pass kernel is not loaded; "
            "call prepare() before capturing");
    }
    KILN_ASSIGN_OR_RETURN(k, p.rt->load(p.spec, KernelFamily::kMxDequant, TileConfig{}, p.arch));
    p.prepass_convert.store(k, std::memory_order_release);
  }
  KILN_RETURN_IF_ERROR(p.rt->prepare_on_device(k, device));
  return k;
}

Status mx_prepass_run(const PlanImpl& p, const CheckedOperands& c, const Operands& ops, void* workspace,
                      CUstream stream) {
  const Driver& d = **p.rt->driver();
  const ProblemSizes sizes{c.m, p.sizes.n, p.sizes.k};
  KILN_ASSIGN_OR_RETURN(LoadedKernel * k, mx_prepass_convert_kernel(p, c.device, stream));
  uint8_t* ws = static_cast<uint8_t*>(workspace);
  uint8_t* ws_b = ws + sm90_mx_prepass_b_offset(sizes);
  kiln_dev::MxDequantParams mp{};
  mp.job[0] = {c.a, c.a_scale, ws, c.m, c.lda, c.lds_a};
  mp.job[1] = {c.b, c.b_scale, ws_b, sizes.n, c.ldb, c.lds_b};
  mp.k = sizes.k;
  // One thread per 8-element unit, at most 8 CTAs of 256 threads per SM (what an SM holds at once); the
  // kernel walks the rest grid-stride.
  LaunchShape ls = launch_shape(p.spec, KernelFamily::kMxDequant, TileConfig{}, sizes);
  KILN_ASSIGN_OR_RETURN(int sms, sm90_sm_count(d, c.device));
  ls.grid_x = std::min<unsigned>(ls.grid_x, static_cast<unsigned>(8 * sms));
  void* args[] = {&mp};
  KILN_RETURN_IF_ERROR(launch_kernel(d, reinterpret_cast<CUfunction>(k->kernel), ls, stream, args,
                                     /*pdl=*/true, "cuLaunchKernelEx(mx_dequant)"));
  // The bf16 GEMM on the copies; everything else (output, epilogue vectors) as the caller gave it.
  int64_t shape_a[2] = {c.m, sizes.k}, shape_b[2] = {sizes.n, sizes.k};
  DLTensor a{}, b{};
  a.data = ws;
  b.data = ws_b;
  a.device = b.device = DLDevice{kDLCUDA, c.device};
  a.ndim = b.ndim = 2;
  a.shape = shape_a;
  b.shape = shape_b;
  a.dtype = b.dtype = DLDataType{kDLBfloat, 16, 1};
  Operands bf = ops;
  bf.a = &a;
  bf.b = &b;
  bf.a_scale = bf.b_scale = nullptr;
  return run_plan(*p.prepass_gemm, bf, nullptr, 0, stream);
}

}  // namespace kiln

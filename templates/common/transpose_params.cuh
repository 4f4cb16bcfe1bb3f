// templates/common/transpose_params.cuh — the kernel-argument ABI of the 8-bit transpose
// (kernels/fp8_transpose.cuh), shared by host and device (plain C++: no CUDA keywords, no includes).
//
// One launch writes the transposed copy of every expert's FP8 weight that a quantized dgrad reads
// (runtime/dgrad_transpose.cpp):
//   src        codes [E][rows][cols] bytes, row stride ld_src, experts src_expert apart   (W [N, K])
//   dst        codes [E][cols][rows] bytes, dense: row stride rows, experts rows * cols apart (Wᵀ [K, N])
//   src_scale  128 x 128 block scales [E][ceil(rows/128)][ceil(cols/128)], row stride lds_src, experts
//              src_scale_expert apart (elements of scale_bytes each); null: no block scales to move
//   dst_scale  [E][ceil(cols/128)][ceil(rows/128)], dense
// Requirements (checked by the runtime): rows % 16 == 0, cols % 16 == 0, src, ld_src, src_expert and
// dst 16-byte aligned. Add fields only at the end and bump kCodegenVersion.
#pragma once

namespace kiln_dev {

struct TransposeParams {
  const void* src;
  void* dst;
  const void* src_scale;
  void* dst_scale;
  long long rows, cols;
  long long ld_src, src_expert;
  long long lds_src, src_scale_expert;
  int scale_bytes;  // 4 (f32), 1 (E8M0), 0 (none)
};

}  // namespace kiln_dev

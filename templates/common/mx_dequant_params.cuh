// templates/common/mx_dequant_params.cuh — the kernel-argument ABI of the MXFP8 pre-pass's conversion
// kernel (kernels/mx_dequant.cuh), shared by host and device (plain C++: no CUDA keywords, no includes).
//
// One launch converts both operands of an MXFP8 GEMM to bf16 (runtime/mx_prepass.cpp):
//   job[0] = X: codes [M, K] e4m3 bytes, scales [M, K/32] E8M0 bytes -> out bf16 [M, K] (dense)
//   job[1] = W: codes [N, K],             scales [N, K/32]            -> out bf16 [N, K] (dense)
// (grouped GEMMs: X's rows of every expert, M or E * max_m; W [E, N, K] as E * N rows.) ld_codes and
// ld_scales are row strides in bytes; group_rows rows (one expert's) share a group, groups lie
// group_codes / group_scales bytes apart (0 and rows for X). dense: codes and scales are contiguous
// (row strides K and K / 32, groups back to back), so the kernel needs no division. The kernel works in
// 8-element units: rows * K / 8 per job, job 0's first. Requirements (checked by the runtime before it offers
// the pre-pass): K % 32 == 0, codes' base and row stride 16-byte aligned, out 16-byte aligned. Add fields
// only at the end and bump kCodegenVersion.
#pragma once

namespace kiln_dev {

struct MxDequantJob {
  const void* codes;
  const void* scales;
  void* out;
  long long rows;
  long long ld_codes;
  long long ld_scales;
  long long group_rows;
  long long group_codes;
  long long group_scales;
  int dense;
  int reserved;
};

struct MxDequantParams {
  MxDequantJob job[2];
  long long k;
};

}  // namespace kiln_dev

// templates/common/gemm_params.cuh — the kernel-argument ABI shared by host and device.
//
// Every GEMM kernel kiln generates takes exactly one GemmParams by value. This header is plain C++
// (no CUDA keywords, no includes) so the host runtime includes it too and both sides agree on the
// layout byte for byte. Add fields only at the end and bump kCodegenVersion.
#pragma once

namespace kiln_dev {

struct GemmParams {
  const void* a;          // X [M, K], row stride lda elements (K-contiguous)
  const void* b;          // W [N, K], row stride ldb elements (K-contiguous)
  void* out;              // Y [M, N], row stride ldc elements (N-contiguous)
  const float* a_scale;   // per the spec (tensor: one f32), or null when the format is unscaled
  const float* b_scale;
  long long lda;
  long long ldb;
  long long ldc;
  int m;
  int n;
  int k;
  int reserved;
};

}  // namespace kiln_dev

// verify/check_inputs.hpp — random operands in a spec's formats, on the host and on the device, for
// run_check (verify/check.hpp) and the gpu tests.
//
// Quantized operands are produced the way real checkpoints are: random f32 values (magnitudes varying
// per row and per 32-K block, so block scales differ) quantized by the CPU references of
// compiler/numerics (fp8_block_quantize for e4m3 row / block scales, mx_quantize for mxfp8 / mxfp4,
// nvfp4_quantize with the spec's bound and four-over-six choice). Per-tensor FP8 and e5m2 row scales
// take random codes and a random positive f32 scale. Grouped problems get a random split of the rows
// over the experts (a quarter of them empty) unless the caller gives one. Specs with an epilogue get
// its vectors: per-token scale[m] in (0.05, 1] like router weights, positive
// colscale / expert_scale factors, biases in [-1, 1) and residuals in [-2, 2) as bf16; the masked
// layout's [m] and [m,n] vectors in their [E, max_m, ..] form.
//
//   uint64_t seed = 42;
//   KILN_ASSIGN_OR_RETURN(HostOperands h, random_operands(spec, m, n, k, {}, seed));
//   KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::upload(spec, h));   // in a context
//   Operands ops = d.operands();                                                 // out: poisoned
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/epilogue/epilogue.hpp"
#include "kiln/kiln.hpp"
#include "runtime/device_buffer.hpp"

namespace kiln {

// A host tensor: bytes plus its DLPack shape and dtype (row-major, contiguous).
struct HostTensor {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> shape;
  DLDataType dtype{kDLUInt, 8, 1};
  bool present() const { return !shape.empty(); }
};

struct HostOperands {
  GroupLayout layout = GroupLayout::kDense;
  int64_t rows = 0;   // rows of X and Y: M, or experts * max_m (masked)
  int64_t max_m = 0;  // masked layout
  HostTensor a, b, out, a_scale, b_scale, b_global, group_rows;
  // The epilogue's vectors in slot order (ep[s] is operand ep_operands[s]), row-major.
  std::vector<EpilogueOperand> ep_operands;
  std::vector<HostTensor> ep;
};

// Value of epilogue vector slot s of h at output element (row, col) of expert e (row-major data;
// [m] and [m,n] count Y's rows as the kernels do).
float host_epilogue_value(const HostOperands& h, size_t slot, int64_t row, int64_t col, int64_t expert,
                          int64_t n_out);

// m: rows of X (dense, offsets: the total; masked: max_m per expert). group_rows: per-expert rows
// (offsets layout: counts that sum to m; masked: counts <= m); empty for a random split.
StatusOr<HostOperands> random_operands(const KernelSpec& spec, int64_t m, int64_t n, int64_t k,
                                       const std::vector<int32_t>& group_rows, uint64_t& seed);

// A quantized dgrad's operands as the forward GEMM of dY and Wᵀ reads them (compiler/plan/gemm_view.hpp):
// h with b = W's codes transposed to [K, N] (grouped [E, K, N]) and 128 x 128 block scales to
// [K/128, ceil(N/128)] per expert; a tensor scale as it is. The reference's operands in run_check, made on
// the host independently of the runtime's transpose kernel.
// Rows per expert, drawn with the generator state s: a random split of m rows (offsets) or random counts up
// to m (masked, one expert full), about a quarter of the experts empty.
std::vector<int32_t> random_groups(bool masked, int experts, int64_t m, uint64_t& s);

HostOperands transposed_w_operands(const KernelSpec& spec, const HostOperands& h, int64_t n, int64_t k);

// The device copies (out poisoned with 0xFF: NaN in every float format) and their DLTensors.
class DeviceOperands {
 public:
  static StatusOr<DeviceOperands> upload(const HostOperands& h);
  Operands operands();
  // The same operands with another output (the reference kernel's f32 one); with_epilogue = false
  // leaves out the epilogue's vectors (the reference computes the plain GEMM).
  Operands operands_with_out(DLTensor* out, bool with_epilogue = true);
  DeviceBuffer& out() { return out_; }
  const DLTensor& out_tensor() const { return t_[2]; }

 private:
  DeviceBuffer bufs_[7];  // a, b, (out), a_scale, b_scale, b_global, group_rows
  DeviceBuffer out_;
  DLTensor t_[7]{};
  std::vector<int64_t> shapes_[7];
  bool present_[7] = {};
  GroupLayout layout_ = GroupLayout::kDense;
  std::vector<DeviceBuffer> ep_bufs_;  // the epilogue's vectors in slot order
  std::vector<DLTensor> ep_t_;
  std::vector<std::vector<int64_t>> ep_shapes_;
  std::vector<EpVector> ep_vectors_;
};

}  // namespace kiln

// runtime/operands_epilogue.cpp — the epilogue's vector operands (bias, scale, colscale, expert_scale,
// residual, gate_bias, up_bias): each one the spec's epilogue reads, at the shape its index needs, and
// none it does not (operands.hpp).
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/operands_internal.hpp"

namespace kiln {

namespace operands_internal {

namespace {

using std::string;
using std::to_string;

string shape_text(const DLTensor* t) {
  string s = "[";
  for (int i = 0; i < t->ndim; ++i) s += (i ? ", " : "") + to_string(t->shape[i]);
  return s + "]";
}

string dims_text(const int64_t* d, size_t count) {
  string s = "[";
  for (size_t i = 0; i < count; ++i) s += (i ? ", " : "") + to_string(d[i]);
  return s + "]";
}

int64_t stride_of(const DLTensor* t, int dim) {
  if (t->strides != nullptr) return t->strides[dim];
  int64_t s = 1;
  for (int i = t->ndim - 1; i > dim; --i) s *= t->shape[i];
  return s;
}

// One epilogue vector: its device, dtype and shape for the index the epilogue reads it with, and its
// element strides (kiln_dev::EpilogueVector). rows: Y's rows (M, or E * max_m); masked: the [E, max_m]
// forms of [m] and [m,n] are accepted when the two leading dimensions flatten.
StatusOr<kiln_dev::EpilogueVector> check_epilogue_vector(const EpilogueOperand& eo, const DLTensor* t,
                                                         int64_t rows, int64_t n_out, int64_t experts, int64_t max_m,
                                                         bool masked, int device) {
  const Who n{ep_vector_name(eo.vector)};
  auto read = [&] { return string(n.name) + ep_index_name(eo.index); };
  int64_t want[2] = {0, 0};
  size_t want_size = 1;
  switch (eo.index) {
    case EpIndex::kM: want[0] = rows; break;
    case EpIndex::kN: want[0] = n_out; break;
    case EpIndex::kE: want[0] = experts; break;
    case EpIndex::kEN: want[0] = experts, want[1] = n_out, want_size = 2; break;
    case EpIndex::kMN: want[0] = rows, want[1] = n_out, want_size = 2; break;
  }
  auto want_text = [&] {
    string s = dims_text(want, want_size);
    if (masked && (eo.index == EpIndex::kM || eo.index == EpIndex::kMN)) {
      const int64_t two_level_dims[3] = {experts, max_m, n_out};
      s += " (or " + dims_text(two_level_dims, eo.index == EpIndex::kM ? 2 : 3) + ")";
    }
    return s;
  };
  if (t == nullptr)
    return InvalidArgument(n() + ": missing; the spec's epilogue reads " + read() + ": a " + want_text() +
                           " tensor (float32, bfloat16 or float16) on the device");
  KILN_RETURN_IF_ERROR(check_same_device(n, t, device));
  kiln_dev::EpilogueVector v{};
  const DLDataType d = t->dtype;
  if (d.lanes == 1 && d.code == kDLFloat && d.bits == 32) {
    v.dtype = kiln_dev::kEpF32;
  } else if (d.lanes == 1 && d.code == kDLBfloat && d.bits == 16) {
    v.dtype = kiln_dev::kEpBf16;
  } else if (d.lanes == 1 && d.code == kDLFloat && d.bits == 16) {
    v.dtype = kiln_dev::kEpF16;
  } else {
    return InvalidArgument(n() + ": dtype " + dtype_name(d) + "; the epilogue's " + read() +
                           " takes float32, bfloat16 or float16");
  }
  // The masked layout's [E, max_m, ..] form: the two leading dimensions become one when rows of
  // consecutive experts are one stride apart.
  const bool two_level = masked && (eo.index == EpIndex::kM || eo.index == EpIndex::kMN) &&
                         t->ndim == static_cast<int>(want_size) + 1;
  bool shape_ok = t->ndim == static_cast<int>(want_size) || two_level;
  if (shape_ok && two_level) {
    shape_ok = t->shape[0] == experts && t->shape[1] == max_m &&
               (eo.index == EpIndex::kM || t->shape[2] == n_out);
  } else if (shape_ok) {
    for (size_t i = 0; i < want_size; ++i) shape_ok = shape_ok && t->shape[i] == want[i];
  }
  if (!shape_ok)
    return InvalidArgument(n() + ": shape " + shape_text(t) + " but the spec's epilogue reads " + read() +
                           ", which needs " + want_text());
  if (two_level) {
    const int64_t s0 = stride_of(t, 0), s1 = stride_of(t, 1);
    if (experts > 1 && max_m > 1 && s0 != max_m * s1)
      return InvalidArgument(n() + ": strides (" + to_string(s0) + ", " + to_string(s1) +
                             ") of the [E, max_m] dimensions do not flatten to one row index (stride(0) must be "
                             "max_m * stride(1) = " + to_string(max_m * s1) + ")");
    v.stride0 = max_m > 1 ? s1 : s0;
    v.stride1 = eo.index == EpIndex::kMN ? stride_of(t, 2) : 0;
  } else {
    v.stride0 = stride_of(t, 0);
    v.stride1 = want_size == 2 ? stride_of(t, 1) : 0;
  }
  if (v.stride0 < 0 || v.stride1 < 0)
    return InvalidArgument(n() + ": negative strides are not accepted");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  const unsigned eb = d.bits / 8;
  if (addr % eb != 0)
    return InvalidArgument(n() + ": data address 0x" + hex(addr) + " is not " + to_string(eb) + "-byte aligned");
  v.data = reinterpret_cast<const void*>(addr);
  return v;
}

}  // namespace

Status check_epilogue_operands(const KernelSpec& spec, const std::vector<EpilogueOperand>& epilogue,
                               const Operands& ops, int64_t n_out, CheckedOperands& c) {
  // Most specs have no epilogue and get none of its vectors: one test instead of the loop below.
  static_assert(kEpVectorCount == 7, "the test below names every epilogue vector");
  if (epilogue.empty() && ops.bias == nullptr && ops.scale == nullptr && ops.colscale == nullptr &&
      ops.expert_scale == nullptr && ops.residual == nullptr && ops.gate_bias == nullptr && ops.up_bias == nullptr)
    return Status::Ok();
  const bool masked = spec.layout == GroupLayout::kMasked;
  const int64_t experts = spec.op == Op::kGroupedGemm ? spec.experts : 1;
  for (int vi = 0; vi < kEpVectorCount; ++vi) {
    const EpVector vec = static_cast<EpVector>(vi);
    const DLTensor* t = epilogue_tensor(ops, vec);
    const EpilogueOperand* use = nullptr;
    for (const EpilogueOperand& eo : epilogue) {
      if (eo.vector == vec) use = &eo;
    }
    if (use == nullptr) {
      if (t != nullptr)
        return InvalidArgument("operand " + string(ep_vector_name(vec)) + ": given, but " +
                               (spec.epilogue.empty() ? string("the spec has no epilogue")
                                                      : "the spec's epilogue does not read " +
                                                            string(ep_vector_name(vec))));
      continue;
    }
    if (use->slot < 0 || use->slot >= kiln_dev::kMaxEpilogueOperands)
      return Internal("epilogue operand slot " + to_string(use->slot) + " out of range");
    KILN_ASSIGN_OR_RETURN(c.ep[use->slot], check_epilogue_vector(*use, t, c.m, n_out, experts, c.max_m, masked,
                                                                 c.device));
  }
  return Status::Ok();
}

}  // namespace operands_internal

const DLTensor* epilogue_tensor(const Operands& ops, EpVector v) {
  switch (v) {
    case EpVector::kBias: return ops.bias;
    case EpVector::kScale: return ops.scale;
    case EpVector::kColScale: return ops.colscale;
    case EpVector::kExpertScale: return ops.expert_scale;
    case EpVector::kResidual: return ops.residual;
    case EpVector::kGateBias: return ops.gate_bias;
    case EpVector::kUpBias: return ops.up_bias;
  }
  return nullptr;
}

}  // namespace kiln

// runtime/operands_internal.hpp — private to runtime/operands*.cpp: the DLPack tensor checks that the
// GEMM (operands.cpp), epilogue (operands_epilogue.cpp) and quantize (operands_quantize.cpp) operand
// checks share. Defined in operands_tensor.cpp, except the templates and one-liners below.
//
// Messages are built on the error paths only: every check here runs on every Plan::run (dispatch
// cost). An operand's name and a rule's wording travel as a Who (the "operand x" prefix)
// and as text() arguments: a C string, or a callable that builds the string when a check fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/operands.hpp"

namespace kiln::operands_internal {

// DLPack >= 1.1 type codes, accepted by value (Debian ships DLPack 0.6 without them).
inline constexpr uint8_t kDLFloat8E4m3fn = 10;
inline constexpr uint8_t kDLFloat8E5m2 = 12;
inline constexpr uint8_t kDLFloat8E8m0fnu = 14;
inline constexpr uint8_t kDLFloat4E2m1fn = 17;

// "bfloat16", "uint8", "float8_e4m3fn", "float4_e2m1fn_x2", ...
std::string dtype_name(DLDataType t);
// Lowercase hexadecimal digits of v (no "0x").
std::string hex(uintptr_t v);

inline bool is_byte(DLDataType t) {
  return t.lanes == 1 && t.bits == 8 && (t.code == kDLUInt || t.code == kDLInt);
}

struct Who {
  const char* name;  // "a", "b_scale", "bias", ...
  std::string operator()() const { return std::string("operand ") + name; }
};
inline std::string text(const char* s) { return s; }
template <typename F>
std::string text(const F& f) {
  return f();
}

inline bool on_cuda(const DLTensor* t) {
  return t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged;
}

// On a CUDA device, device `device` (operand a's).
Status check_same_device(const Who& n, const DLTensor* t, int device);

inline int64_t numel(const DLTensor* t) {
  int64_t v = 1;
  for (int i = 0; i < t->ndim; ++i) v *= t->shape[i];
  return v;
}

// Row-major contiguity of a dense vector-like tensor (strides null, or the row-major ones).
inline bool contiguous(const DLTensor* t) {
  if (t->strides == nullptr) return true;
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] > 1 && t->strides[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

// A row-major operand view: data, row stride and batch (expert) stride in logical elements.
struct Mat {
  const void* data = nullptr;
  int64_t ld = 0;
  int64_t batch_stride = 0;
  int64_t batch = 0;  // experts (0 without a batch dimension)
  int64_t rows = 0;
};

// A matrix operand [rows, cols] (batch >= 0: [batch, rows, cols]) in format f. rows < 0: any.
// Inputs (a, b) are read with 16-byte copies: rows on 16-byte boundaries. The output is written
// with element (or paired, where aligned) stores: any row stride >= N, element-aligned base.
StatusOr<Mat> check_matrix(const char* name, const DLTensor* t, Format f, int64_t batch, int64_t rows, int64_t cols,
                           const char* rows_name, const char* cols_name, bool vector_rows = true);

// A contiguous f32 vector of `count` elements on the device (tensor scale: count 1).
// what: text() of the rule on the count, for the message.
template <typename What>
StatusOr<const float*> check_f32_vector(const Who& n, const DLTensor* t, int64_t count, int device,
                                        const What& what) {
  KILN_RETURN_IF_ERROR(check_same_device(n, t, device));
  if (!(t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1)) {
    return InvalidArgument(n() + ": dtype " + dtype_name(t->dtype) + "; expected float32");
  }
  const int64_t got = numel(t);
  if (got != count) return InvalidArgument(n() + ": " + std::to_string(got) + " elements; " + text(what));
  if (!contiguous(t)) return InvalidArgument(n() + ": not contiguous; kiln reads it as one dense vector");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (addr % 4 != 0) return InvalidArgument(n() + ": data address is not 4-byte aligned");
  return reinterpret_cast<const float*>(addr);
}

struct ScaleView {
  const float* data = nullptr;
  int64_t lds = 0;
  int64_t batch_stride = 0;
};

// A 2-D scale matrix [rows, cols] (batch >= 0: [batch, rows, cols]) of type st. meaning: text() of
// what the scales are, for the message.
template <typename Meaning>
StatusOr<ScaleView> check_scale_matrix(const Who& n, const DLTensor* t, ScaleType st, int64_t batch, int64_t rows,
                                       int64_t cols, int device, const Meaning& meaning) {
  using std::string;
  using std::to_string;
  KILN_RETURN_IF_ERROR(check_same_device(n, t, device));
  const DLDataType d = t->dtype;
  bool ok = false;
  const char* want = "";
  switch (st) {
    case ScaleType::kF32:
      ok = d.code == kDLFloat && d.bits == 32 && d.lanes == 1;
      want = "float32";
      break;
    case ScaleType::kUe8m0:
      ok = is_byte(d) || (d.code == kDLFloat8E8m0fnu && d.bits == 8 && d.lanes == 1);
      want = "uint8 E8M0 bytes, or DLPack float8_e8m0fnu";
      break;
    case ScaleType::kUe4m3:
      ok = is_byte(d) || (d.code == kDLFloat8E4m3fn && d.bits == 8 && d.lanes == 1);
      want = "uint8 UE4M3 bytes, or DLPack float8_e4m3fn";
      break;
    case ScaleType::kNone: break;
  }
  if (!ok)
    return InvalidArgument(n() + ": dtype " + dtype_name(d) + "; expected " + want + " (" + text(meaning) + ")");
  const int lead = batch >= 0 ? 1 : 0;
  auto shape = [&] {
    // Built by appending: GCC 12 at -O3 reports a false -Wrestrict on `"literal" + std::string`.
    string s = "[";
    if (batch >= 0) s += to_string(batch) + ", ";
    return s + to_string(rows) + ", " + to_string(cols) + "]";
  };
  if (t->ndim != 2 + lead || (batch >= 0 && t->shape[0] != batch) || t->shape[lead] != rows ||
      t->shape[lead + 1] != cols) {
    string got = "[";
    for (int i = 0; i < t->ndim; ++i) got += (i ? ", " : "") + to_string(t->shape[i]);
    return InvalidArgument(n() + ": shape " + got + "]; expected " + shape() + " (" + text(meaning) + ")");
  }
  ScaleView v;
  v.lds = cols;
  v.batch_stride = rows * cols;
  if (t->strides != nullptr) {
    if (t->strides[lead + 1] != 1 && cols > 1)
      return InvalidArgument(n() + ": inner stride " + to_string(t->strides[lead + 1]) +
                             "; kiln reads scale rows contiguous along K (row-major " + shape() + ")");
    if (rows > 1) v.lds = t->strides[lead];
    if (v.lds < cols)
      return InvalidArgument(n() + ": row stride " + to_string(v.lds) + " is smaller than the row length " +
                             to_string(cols));
    if (batch >= 0) v.batch_stride = t->strides[0];
  }
  const uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (st == ScaleType::kF32 && addr % 4 != 0) return InvalidArgument(n() + ": data address is not 4-byte aligned");
  v.data = reinterpret_cast<const float*>(addr);
  return v;
}

// The epilogue's vector operands into c.ep (operands_epilogue.cpp): each one the epilogue reads, and
// none it does not. c.m, c.max_m and c.device are set.
Status check_epilogue_operands(const KernelSpec& spec, const std::vector<EpilogueOperand>& epilogue,
                               const Operands& ops, int64_t n_out, CheckedOperands& c);

// An int32 [E] per-expert vector (offsets / counts) on the device, contiguous and 4-byte aligned.
StatusOr<const int32_t*> check_group_rows(const Who& n, const DLTensor* t, int64_t experts, int device,
                                          const char* meaning);

}  // namespace kiln::operands_internal

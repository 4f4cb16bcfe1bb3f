#include "runtime/operands.hpp"

#include "compiler/plan/quantize_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

namespace {

using std::string;
using std::to_string;

// DLPack >= 1.1 type codes, accepted by value (Debian ships DLPack 0.6 without them).
constexpr uint8_t kDLFloat8E4m3fn = 10;
constexpr uint8_t kDLFloat8E5m2 = 12;
constexpr uint8_t kDLFloat8E8m0fnu = 14;
constexpr uint8_t kDLFloat4E2m1fn = 17;

string dtype_name(DLDataType t) {
  string base;
  switch (t.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLFloat8E4m3fn: return "float8_e4m3fn";
    case kDLFloat8E5m2: return "float8_e5m2";
    case kDLFloat8E8m0fnu: return "float8_e8m0fnu";
    case kDLFloat4E2m1fn: {
      // Built by appending: GCC 12 at -O3 reports a false -Wrestrict on `"literal" + std::string`.
      string name = "float4_e2m1fn";
      if (t.lanes != 1) {
        name += "_x";
        name += to_string(t.lanes);
      }
      return name;
    }
    default: base = "code" + to_string(t.code) + "_"; break;
  }
  string s = base + to_string(t.bits);
  if (t.lanes != 1) {
    s += 'x';
    s += to_string(t.lanes);
  }
  return s;
}

bool is_byte(DLDataType t) { return t.lanes == 1 && t.bits == 8 && (t.code == kDLUInt || t.code == kDLInt); }

// Logical elements per stored element of t for format f; 0 when t cannot hold f.
int elems_per_item(Format f, DLDataType t) {
  switch (f) {
    case Format::kBf16: return t.lanes == 1 && t.code == kDLBfloat && t.bits == 16 ? 1 : 0;
    case Format::kF16: return t.lanes == 1 && t.code == kDLFloat && t.bits == 16 ? 1 : 0;
    case Format::kF32: return t.lanes == 1 && t.code == kDLFloat && t.bits == 32 ? 1 : 0;
    case Format::kE4m3:
    case Format::kMxfp8: return is_byte(t) || (t.lanes == 1 && t.bits == 8 && t.code == kDLFloat8E4m3fn) ? 1 : 0;
    case Format::kE5m2: return is_byte(t) || (t.lanes == 1 && t.bits == 8 && t.code == kDLFloat8E5m2) ? 1 : 0;
    case Format::kMxfp4:
    case Format::kNvfp4:
      if (is_byte(t)) return 2;  // two codes per byte, the even element in the low nibble
      if (t.code == kDLFloat4E2m1fn && t.bits == 4 && (t.lanes == 1 || t.lanes == 2)) return t.lanes;
      return 0;
  }
  return 0;
}

// Bytes of one stored element (FP4 with lanes 1: half a byte; rows are whole bytes anyway).
double item_bytes(DLDataType t) { return t.bits * t.lanes / 8.0; }

string expected_dtype(Format f) {
  switch (f) {
    case Format::kBf16: return "bfloat16";
    case Format::kF16: return "float16";
    case Format::kF32: return "float32";
    case Format::kE4m3: return "uint8 bytes, or DLPack float8_e4m3fn";
    case Format::kE5m2: return "uint8 bytes, or DLPack float8_e5m2";
    case Format::kMxfp8: return "uint8 bytes of e4m3, or DLPack float8_e4m3fn";
    case Format::kMxfp4:
    case Format::kNvfp4:
      return "uint8 bytes [.., K/2] holding two E2M1 codes each (or gpt-oss's [.., K/32, 16]), or DLPack "
             "float4_e2m1fn";
  }
  return string("a ") + format_name(f) + " view";
}

string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Messages are built on the error paths only: every check here runs on every Plan::run (dispatch
// cost, tuner issue). An operand's name and a rule's wording travel as a Who (the "operand x" prefix)
// and as text() arguments: a C string, or a callable that builds the string when a check fails.
struct Who {
  const char* name;  // "a", "b_scale", "bias", ...
  string operator()() const { return string("operand ") + name; }
};
inline string text(const char* s) { return s; }
template <typename F>
string text(const F& f) {
  return f();
}

bool on_cuda(const DLTensor* t) {
  return t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged;
}

Status check_device(const Who& n, const DLTensor* t) {
  if (!on_cuda(t)) {
    return InvalidArgument(n() + ": device type " + to_string(t->device.device_type) +
                           " is not CUDA (kDLCUDA = 2); kiln runs on CUDA device memory");
  }
  return Status::Ok();
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
                           const char* rows_name, const char* cols_name, bool vector_rows = true) {
  const Who n{name};
  if (t == nullptr) return InvalidArgument(n() + ": missing (NULL)");
  KILN_RETURN_IF_ERROR(check_device(n, t));
  const int per = elems_per_item(f, t->dtype);
  if (per == 0) {
    return InvalidArgument(n() + ": dtype " + dtype_name(t->dtype) + " but the spec says " + name + "=" +
                           format_name(f) + " (" + expected_dtype(f) + ")");
  }
  const int lead = batch >= 0 ? 1 : 0;  // index of the rows dimension
  const int base_ndim = 2 + lead;
  // gpt-oss MXFP4 checkpoints: [.., rows, K/32, 16] bytes, the same memory as [.., rows, K/2].
  const bool blocks16 = per == 2 && is_byte(t->dtype) && t->ndim == base_ndim + 1;
  if (t->ndim != base_ndim && !blocks16) {
    string want = batch >= 0 ? string("3-D [E, ") + rows_name + ", " + cols_name + "]"
                             : string("2-D [") + rows_name + ", " + cols_name + "]";
    if (per == 2) want += " (bytes: " + string(cols_name) + "/2), or the gpt-oss " + to_string(base_ndim + 1) + "-D form";
    return InvalidArgument(n() + ": " + to_string(t->ndim) + "-D tensor; expected " + want);
  }
  if (batch >= 0 && t->shape[0] != batch) {
    return InvalidArgument(n() + ": shape[0] = " + to_string(t->shape[0]) + " but the spec has experts = " +
                           to_string(batch));
  }
  if (rows >= 0 && t->shape[lead] != rows) {
    return InvalidArgument(n() + ": shape[" + to_string(lead) + "] = " + to_string(t->shape[lead]) + " but " +
                           rows_name + " = " + to_string(rows));
  }
  const int64_t items = cols / per;  // stored elements per row
  if (blocks16) {
    const int64_t* s = t->shape;
    if (s[lead + 1] * s[lead + 2] != items || s[lead + 2] != 16) {
      return InvalidArgument(n() + ": shape [.., " + to_string(s[lead + 1]) + ", " + to_string(s[lead + 2]) +
                             "]; the gpt-oss block form is [.., " + cols_name + "/32, 16] = [.., " +
                             to_string(cols / 32) + ", 16]");
    }
  } else if (t->shape[lead + 1] != items) {
    if (per == 1) {
      return InvalidArgument(n() + ": shape[" + to_string(lead + 1) + "] = " + to_string(t->shape[lead + 1]) +
                             " but the plan has " + cols_name + " = " + to_string(cols));
    }
    return InvalidArgument(n() + ": shape[" + to_string(lead + 1) + "] = " + to_string(t->shape[lead + 1]) +
                           " but the plan has " + cols_name + " = " + to_string(cols) + ", i.e. " +
                           to_string(items) + " items of two E2M1 codes");
  }
  Mat mat;
  mat.rows = t->shape[lead];
  mat.batch = batch >= 0 ? batch : 0;
  int64_t ld = items;
  int64_t bstride = mat.rows * items;
  if (t->strides != nullptr) {
    const int inner = t->ndim - 1;
    const bool inner_ok = t->strides[inner] == 1 || t->shape[inner] <= 1;
    if (!inner_ok || (blocks16 && t->strides[inner - 1] != 16 && t->shape[inner - 1] > 1)) {
      return InvalidArgument(n() + ": inner stride " + to_string(t->strides[inner]) +
                             "; kiln needs the last dimension contiguous (stride 1), e.g. call .contiguous()");
    }
    ld = t->strides[lead];
    if (mat.rows > 1 && ld < items) {
      return InvalidArgument(n() + ": row stride " + to_string(ld) + " is smaller than the row length " +
                             to_string(items));
    }
    if (mat.rows <= 1) ld = items;
    if (batch >= 0) {
      bstride = t->strides[0];
      if (batch > 1 && bstride < mat.rows * ld) {
        return InvalidArgument(n() + ": expert stride " + to_string(bstride) + " is smaller than one expert's " +
                               to_string(mat.rows * ld) + " elements; experts may not overlap");
      }
    }
  }
  const double eb = item_bytes(t->dtype);
  const int64_t align = vector_rows ? 16 : static_cast<int64_t>(eb < 1 ? 1 : eb);
  if (vector_rows && static_cast<int64_t>(ld * eb) % 16 != 0) {
    if (per == 1) {
      return InvalidArgument(n() + ": row stride " + to_string(ld) + " elements = " + to_string(int64_t(ld * eb)) +
                             " bytes; rows must start on 16-byte boundaries (a multiple of " +
                             to_string(int64_t(16 / eb)) + " elements)");
    }
    return InvalidArgument(n() + ": row stride " + to_string(int64_t(ld * eb)) +
                           " bytes; rows must start on 16-byte boundaries");
  }
  if (vector_rows && batch > 1 && static_cast<int64_t>(bstride * eb) % 16 != 0) {
    return InvalidArgument(n() + ": expert stride " + to_string(int64_t(bstride * eb)) +
                           " bytes; experts must start on 16-byte boundaries");
  }
  const uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (addr % align != 0) {
    return InvalidArgument(n() + ": data address 0x" + hex(addr) + " is not " + to_string(align) + "-byte aligned");
  }
  mat.data = reinterpret_cast<const void*>(addr);
  mat.ld = ld * per;
  mat.batch_stride = bstride * per;
  return mat;
}

Status check_same_device(const Who& n, const DLTensor* t, int device) {
  if (!on_cuda(t)) {
    return InvalidArgument(n() + ": must be on the CUDA device (graph-safe: never a host float)");
  }
  if (t->device.device_id != device) {
    return InvalidArgument(n() + ": on device " + to_string(t->device.device_id) + " but operand a is on device " +
                           to_string(device));
  }
  return Status::Ok();
}

int64_t numel(const DLTensor* t) {
  int64_t v = 1;
  for (int i = 0; i < t->ndim; ++i) v *= t->shape[i];
  return v;
}

// Row-major contiguity of a dense vector-like tensor (strides null, or the row-major ones).
bool contiguous(const DLTensor* t) {
  if (t->strides == nullptr) return true;
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] > 1 && t->strides[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

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
  if (got != count) return InvalidArgument(n() + ": " + to_string(got) + " elements; " + text(what));
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

// An int32 [E] per-expert vector (offsets / counts).
StatusOr<const int32_t*> check_group_rows(const Who& n, const DLTensor* t, int64_t experts, int device,
                                          const char* meaning) {
  KILN_RETURN_IF_ERROR(check_same_device(n, t, device));
  if (!(t->dtype.code == kDLInt && t->dtype.bits == 32 && t->dtype.lanes == 1))
    return InvalidArgument(n() + ": dtype " + dtype_name(t->dtype) + "; expected int32 (" + meaning + ")");
  if (t->ndim != 1 || t->shape[0] != experts)
    return InvalidArgument(n() + ": " + to_string(t->ndim) + "-D with " + to_string(numel(t)) +
                           " elements; expected 1-D [" + to_string(experts) + "] (" + meaning + ")");
  if (!contiguous(t)) return InvalidArgument(n() + ": not contiguous (stride 1 expected)");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (addr % 4 != 0) return InvalidArgument(n() + ": data address is not 4-byte aligned");
  return reinterpret_cast<const int32_t*>(addr);
}

// The scale of operand a or b per its spec. rows: M (a) or N (b); experts: b's leading dimension
// (-1 for none).
Status check_operand_scale(const char* name, const DLTensor* t, const OperandSpec& op, bool is_a, int64_t rows,
                           int64_t k, int64_t experts, int device, CheckedOperands& c) {
  const Who n{name};
  const float** out = is_a ? &c.a_scale : &c.b_scale;
  if (op.scale == ScaleGranularity::kNone) {
    if (t != nullptr) {
      return InvalidArgument(n() + ": given, but the operand's format " + string(format_name(op.format)) +
                             " takes no scale");
    }
    return Status::Ok();
  }
  if (t == nullptr) {
    const string fmt = format_name(op.format);
    string what;
    switch (op.scale) {
      case ScaleGranularity::kTensor: what = "one f32 scale on the device (decode scale: x = q * s)"; break;
      case ScaleGranularity::kM: what = "f32 [M] per-token scales on the device"; break;
      case ScaleGranularity::kN: what = "f32 [N] per-channel scales on the device"; break;
      case ScaleGranularity::kBlock1x128: what = "[M, K/128] block scales on the device"; break;
      case ScaleGranularity::kBlock128x128: what = "[ceil(N/128), K/128] block scales on the device"; break;
      case ScaleGranularity::kBlock1x32: what = "E8M0 [rows, K/32] block scales on the device"; break;
      case ScaleGranularity::kBlock1x16: what = "UE4M3 [N, K/16] block scales on the device"; break;
      case ScaleGranularity::kNone: break;
    }
    return InvalidArgument(n() + ": missing; the spec's " + fmt + ":" + scale_granularity_name(op.scale) +
                           " needs " + what);
  }
  const int64_t batch = experts;  // -1: no expert dimension
  const int64_t per_expert = batch >= 0 ? batch : 1;
  switch (op.scale) {
    case ScaleGranularity::kTensor: {
      // Grouped weights: one tensor scale per expert.
      const int64_t count = is_a ? 1 : per_expert;
      KILN_ASSIGN_OR_RETURN(*out, check_f32_vector(n, t, count, device, [count] {
                              return count == 1 ? string("a tensor scale has exactly 1")
                                                : "grouped weights take one tensor scale per expert (" +
                                                      to_string(count) + ")";
                            }));
      if (!is_a && batch >= 0) c.b_scale_expert_stride = 1;
      return Status::Ok();
    }
    case ScaleGranularity::kM:
    case ScaleGranularity::kN: {
      const int64_t count = per_expert * rows;
      KILN_ASSIGN_OR_RETURN(*out, check_f32_vector(n, t, count, device, [is_a, count, batch] {
                              return string("a per-") + (is_a ? "token" : "channel") + " scale vector has " +
                                     to_string(count) + " (" + (is_a ? "M" : "N") +
                                     (batch >= 0 ? " per expert" : "") + ")";
                            }));
      if (!is_a) c.b_scale_expert_stride = rows;
      return Status::Ok();
    }
    default: break;
  }
  int64_t srows = rows, scols = 0;
  const char* meaning = "";  // kBlock1x32: the format's name goes in front
  switch (op.scale) {
    case ScaleGranularity::kBlock1x128:
      scols = k / 128;
      meaning = "one scale per row per 128 K";
      break;
    case ScaleGranularity::kBlock128x128:
      srows = (rows + 127) / 128;
      scols = k / 128;
      meaning = "one scale per 128 rows of W per 128 K";
      break;
    case ScaleGranularity::kBlock1x32:
      scols = k / 32;
      meaning = " E8M0 scales, one per row per 32 K";
      break;
    default:  // kBlock1x16
      scols = k / 16;
      meaning = "nvfp4 UE4M3 scales, one per row per 16 K";
      break;
  }
  const bool named = op.scale == ScaleGranularity::kBlock1x32;
  const Format format = op.format;
  KILN_ASSIGN_OR_RETURN(ScaleView v, check_scale_matrix(n, t, op.scale_type, batch, srows, scols, device, [=] {
                          return named ? format_name(format) + string(meaning) : string(meaning);
                        }));
  *out = v.data;
  (is_a ? c.lds_a : c.lds_b) = v.lds;
  if (!is_a) c.b_scale_expert_stride = batch >= 0 ? v.batch_stride : 0;
  return Status::Ok();
}


// ---- epilogues issue: the epilogue's vector operands ----

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
}  // namespace

int64_t output_columns(const KernelSpec& spec, int64_t n) { return spec.gate_up != GateUp::kNone ? n / 2 : n; }

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

StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops) {
  KILN_ASSIGN_OR_RETURN(std::optional<EpilogueProgram> program, spec_epilogue_program(spec));
  return check_operands(spec, sizes, ops, program ? program->operands : std::vector<EpilogueOperand>{});
}

StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops,
                                         const std::vector<EpilogueOperand>& epilogue) {
  CheckedOperands c;
  KILN_RETURN_IF_ERROR(check_operands(spec, sizes, ops, epilogue, c));
  return c;
}

Status check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops,
                      const std::vector<EpilogueOperand>& epilogue, CheckedOperands& c) {
  c = CheckedOperands{};
  const bool grouped = spec.op == Op::kGroupedGemm;
  const bool masked = spec.layout == GroupLayout::kMasked;
  const int64_t experts = grouped ? spec.experts : -1;

  // a: [M, K]; masked: [E, max_m, K].
  KILN_ASSIGN_OR_RETURN(Mat a, check_matrix("a", ops.a, spec.a.format, masked ? experts : -1, -1, sizes.k,
                                            masked ? "max_m" : "M", "K"));
  c.device = ops.a->device.device_id;
  if (masked) {
    if (a.batch_stride != a.rows * a.ld && a.rows > 0)
      return InvalidArgument("operand a: expert stride " + to_string(a.batch_stride) +
                             " elements; the masked layout needs the experts' rows contiguous (stride(0) = max_m * "
                             "stride(1) = " +
                             to_string(a.rows * a.ld) + ")");
    c.max_m = static_cast<int>(std::min<int64_t>(a.rows, INT32_MAX));
    c.m = a.rows * spec.experts;
  } else {
    c.m = a.rows;
  }
  c.lda = a.ld;
  c.a = a.data;
  if (c.m > INT32_MAX) return InvalidArgument("operand a: M = " + to_string(c.m) + " exceeds 2^31 - 1");

  // b: [N, K]; grouped: [E, N, K].
  KILN_ASSIGN_OR_RETURN(Mat b, check_matrix("b", ops.b, spec.b.format, experts, sizes.n, sizes.k, "N", "K"));
  c.ldb = b.ld;
  c.b = b.data;
  c.b_expert_stride = grouped ? b.batch_stride : 0;

  // out: [M, N]; masked: [E, max_m, N]; N / 2 columns for a gate|up GLU (epilogues issue).
  const int64_t n_out = output_columns(spec, sizes.n);
  KILN_ASSIGN_OR_RETURN(Mat o, check_matrix("out", ops.out, spec.out.format, masked ? experts : -1,
                                            masked ? a.rows : c.m, n_out, masked ? "max_m" : "M",
                                            spec.gate_up != GateUp::kNone ? "N/2 (gate_up)" : "N",
                                            /*vector_rows=*/false));
  if (masked && a.rows > 0 && o.batch_stride != o.rows * o.ld)
    return InvalidArgument("operand out: expert stride " + to_string(o.batch_stride) +
                           " elements; the masked layout needs the experts' rows contiguous (stride(0) = max_m * "
                           "stride(1) = " +
                           to_string(o.rows * o.ld) + ")");
  c.ldc = o.ld;
  c.out = const_cast<void*>(o.data);
  if (ops.b->device.device_id != c.device || ops.out->device.device_id != c.device) {
    return InvalidArgument("operands a, b and out must be on one device; found devices " + to_string(c.device) +
                           ", " + to_string(ops.b->device.device_id) + ", " + to_string(ops.out->device.device_id));
  }

  KILN_RETURN_IF_ERROR(check_operand_scale("a_scale", ops.a_scale, spec.a, true, c.m, sizes.k, -1, c.device, c));
  KILN_RETURN_IF_ERROR(
      check_operand_scale("b_scale", ops.b_scale, spec.b, false, sizes.n, sizes.k, experts, c.device, c));

  // The NVFP4 global decode scale.
  const bool nvfp4 = spec.b.format == Format::kNvfp4;
  if (!nvfp4 && ops.b_global != nullptr)
    return InvalidArgument("operand b_global: given, but only nvfp4 weights take a global scale (b=" +
                           string(format_name(spec.b.format)) + ")");
  if (nvfp4) {
    const bool per_expert = spec.nvfp4_global == GlobalScale::kExpert;
    const int64_t count = per_expert ? spec.experts : 1;
    if (ops.b_global == nullptr)
      return InvalidArgument("operand b_global: missing; b=nvfp4 needs its f32 global decode scale (amax / (6 * " +
                             to_string(spec.e4m3_bound) + ")) on the device, " +
                             (per_expert ? "one per expert [" + to_string(count) + "]" : string("[1]")));
    KILN_ASSIGN_OR_RETURN(c.b_global,
                          check_f32_vector(Who{"b_global"}, ops.b_global, count, c.device, [per_expert, count] {
                            return per_expert ? "nvfp4_global=expert takes one per expert (" + to_string(count) + ")"
                                              : string("nvfp4_global=tensor takes exactly 1");
                          }));
  }

  // Grouped: the per-expert row vector.
  const bool offsets = spec.layout == GroupLayout::kOffsets;
  if (!offsets && ops.offsets != nullptr)
    return InvalidArgument("operand offsets: given, but the spec is not grouped_gemm[layout=offsets]");
  if (!masked && ops.counts != nullptr)
    return InvalidArgument("operand counts: given, but the spec is not grouped_gemm[layout=masked]");
  if (offsets) {
    if (ops.offsets == nullptr)
      return InvalidArgument("operand offsets: missing; layout=offsets needs an int32 [" + to_string(spec.experts) +
                             "] device tensor of cumulative row ends");
    KILN_ASSIGN_OR_RETURN(c.group_rows, check_group_rows(Who{"offsets"}, ops.offsets, spec.experts, c.device,
                                                         "cumulative row ends per expert"));
  }
  if (masked) {
    if (ops.counts == nullptr)
      return InvalidArgument("operand counts: missing; layout=masked needs an int32 [" + to_string(spec.experts) +
                             "] device tensor of rows per expert");
    KILN_ASSIGN_OR_RETURN(c.group_rows, check_group_rows(Who{"counts"}, ops.counts, spec.experts, c.device,
                                                         "rows per expert"));
  }
  c.experts = grouped ? spec.experts : 0;
  return check_epilogue_operands(spec, epilogue, ops, n_out, c);  // epilogues issue
}

kiln_dev::GemmParams gemm_params(const CheckedOperands& c, const ProblemSizes& sizes) {
  kiln_dev::GemmParams gp{};
  gp.a = c.a;
  gp.b = c.b;
  gp.out = c.out;
  gp.a_scale = c.a_scale;
  gp.b_scale = c.b_scale;
  gp.lda = c.lda;
  gp.ldb = c.ldb;
  gp.ldc = c.ldc;
  gp.m = static_cast<int>(c.m);
  gp.n = static_cast<int>(sizes.n);
  gp.k = static_cast<int>(sizes.k);
  gp.lds_a = c.lds_a;
  gp.lds_b = c.lds_b;
  gp.b_global = c.b_global;
  gp.group_rows = c.group_rows;
  gp.b_expert_stride = c.b_expert_stride;
  gp.b_scale_expert_stride = c.b_scale_expert_stride;
  gp.experts = c.experts;
  gp.max_m = c.max_m;
  for (int i = 0; i < kiln_dev::kMaxEpilogueOperands; ++i) gp.ep[i] = c.ep[i];
  return gp;
}

int64_t bucket_rows(const KernelSpec& spec, const CheckedOperands& c) {
  if (spec.layout == GroupLayout::kMasked) return c.max_m;
  if (spec.layout == GroupLayout::kOffsets && c.experts > 0) return (c.m + c.experts - 1) / c.experts;
  return c.m;
}

StatusOr<CheckedQuantize> check_quantize_operands(const KernelSpec& spec, const ProblemSizes& sizes,
                                                  const Operands& ops) {
  CheckedQuantize q;
  for (int vi = 0; vi < kEpVectorCount; ++vi) {
    if (epilogue_tensor(ops, static_cast<EpVector>(vi)) != nullptr)
      return InvalidArgument("operand " + string(ep_vector_name(static_cast<EpVector>(vi))) +
                             ": given, but quantize specs have no epilogue");
  }
  if (ops.b != nullptr || ops.a_scale != nullptr || ops.b_scale != nullptr || ops.b_global != nullptr ||
      ops.offsets != nullptr || ops.counts != nullptr)
    return InvalidArgument("quantize takes a (the input), out, out_scale and (nvfp4) out_global; operand " +
                           string(ops.b ? "b" : ops.a_scale ? "a_scale" : ops.b_scale ? "b_scale"
                                          : ops.b_global ? "b_global" : ops.offsets ? "offsets" : "counts") +
                           " was given");
  KILN_ASSIGN_OR_RETURN(Mat a, check_matrix("a", ops.a, spec.a.format, -1, -1, sizes.k, "M", "K"));
  q.device = ops.a->device.device_id;
  q.m = a.rows;
  q.in = a.data;
  q.ld_in = a.ld;
  if (q.m > INT32_MAX) return InvalidArgument("operand a: M = " + to_string(q.m) + " exceeds 2^31 - 1");
  const QuantizeShape qs = quantize_shape(spec);
  const bool transposed = qs.mode == QuantizeMode::kTransposed;
  if (transposed && q.m % qs.block != 0)
    return InvalidArgument("operand a: M = " + to_string(q.m) + " is not a multiple of " + to_string(qs.block) +
                           "; transpose=true quantizes blocks of " + to_string(qs.block) + " rows");
  // out: codes, written in 4-byte (mxfp4) or 8-byte chunks: rows and base aligned to that.
  const int64_t out_rows = transposed ? sizes.k : q.m, out_cols = transposed ? q.m : sizes.k;
  KILN_ASSIGN_OR_RETURN(Mat o, check_matrix("out", ops.out, spec.out.format, -1, out_rows, out_cols,
                                            transposed ? "K" : "M", transposed ? "M" : "K", /*vector_rows=*/false));
  const int64_t chunk = spec.out.format == Format::kMxfp4 ? 4 : 8;
  const int64_t row_bytes = format_bits(spec.out.format) == 4 ? o.ld / 2 : o.ld;
  if (row_bytes % chunk != 0 || reinterpret_cast<uintptr_t>(o.data) % chunk != 0)
    return InvalidArgument("operand out: row stride " + to_string(row_bytes) + " bytes at address 0x" +
                           hex(reinterpret_cast<uintptr_t>(o.data)) + "; the quantize family stores " +
                           to_string(chunk) + "-byte chunks, so rows must start on " + to_string(chunk) +
                           "-byte boundaries");
  if (ops.out->device.device_id != q.device)
    return InvalidArgument("operands a and out must be on one device; found devices " + to_string(q.device) + ", " +
                           to_string(ops.out->device.device_id));
  q.out = const_cast<void*>(o.data);
  q.ld_out = o.ld;

  // out_scale.
  const Who n{"out_scale"};
  const char* fmt = format_name(spec.out.format);
  if (ops.out_scale == nullptr)
    return InvalidArgument(n() + ": missing; quantize writes the scales of out=" + fmt + " there");
  switch (qs.mode) {
    case QuantizeMode::kTensor: {
      KILN_ASSIGN_OR_RETURN(const float* s, check_f32_vector(n, ops.out_scale, 1, q.device,
                                                             "a per-tensor scale has exactly 1 (written)"));
      q.scale = const_cast<float*>(s);
      q.ld_scale = 1;
      break;
    }
    case QuantizeMode::kRow: {
      const int64_t m = q.m;
      KILN_ASSIGN_OR_RETURN(const float* s, check_f32_vector(n, ops.out_scale, q.m, q.device, [m] {
                              return "per-token scales: one f32 per row of a (M = " + to_string(m) + ")";
                            }));
      q.scale = const_cast<float*>(s);
      q.ld_scale = 1;
      break;
    }
    default: {
      int64_t rows = 0, cols = 0;
      if (qs.mode == QuantizeMode::kBlock2d) {
        rows = (q.m + 127) / 128;
        cols = sizes.k / 128;
      } else if (transposed) {
        rows = sizes.k;
        cols = q.m / qs.block;
      } else {
        rows = q.m;
        cols = sizes.k / qs.block;
      }
      const QuantizeMode mode = qs.mode;
      const int block = qs.block;
      auto meaning = [mode, transposed, block] {
        if (mode == QuantizeMode::kBlock2d) return string("one scale per 128 x 128 block");
        if (transposed) return "transpose=true: one scale per column of a per " + to_string(block) + " rows";
        return "one scale per row per " + to_string(block) + " K";
      };
      KILN_ASSIGN_OR_RETURN(ScaleView v, check_scale_matrix(n, ops.out_scale, spec.out.scale_type, -1, rows, cols,
                                                            q.device, meaning));
      q.scale = const_cast<float*>(v.data);
      q.ld_scale = v.lds;
      break;
    }
  }
  const bool nvfp4 = spec.out.format == Format::kNvfp4;
  if (!nvfp4 && ops.out_global != nullptr)
    return InvalidArgument("operand out_global: given, but only out=nvfp4 writes a global scale (out=" + string(fmt) +
                           ")");
  if (nvfp4) {
    if (ops.out_global == nullptr)
      return InvalidArgument("operand out_global: missing; out=nvfp4 writes its f32 global decode scale (amax / (6 * " +
                             to_string(spec.e4m3_bound) + ")) to a device f32 [1]");
    KILN_ASSIGN_OR_RETURN(const float* g, check_f32_vector(Who{"out_global"}, ops.out_global, 1, q.device,
                                                           "the nvfp4 global scale is exactly 1 f32 (written)"));
    q.global = const_cast<float*>(g);
  }
  return q;
}

}  // namespace kiln

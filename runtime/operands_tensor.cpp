// runtime/operands_tensor.cpp — the DLPack side of the operand checks: dtype names and the formats a
// dtype can hold, device checks, and the matrix operands' shapes, strides and alignment
// (operands_internal.hpp).
#include <cstdio>
#include <string>

#include "runtime/operands_internal.hpp"

namespace kiln::operands_internal {

namespace {

using std::string;
using std::to_string;

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

Status check_device(const Who& n, const DLTensor* t) {
  if (!on_cuda(t)) {
    return InvalidArgument(n() + ": device type " + to_string(t->device.device_type) +
                           " is not CUDA (kDLCUDA = 2); kiln runs on CUDA device memory");
  }
  return Status::Ok();
}

}  // namespace

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

string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

StatusOr<Mat> check_matrix(const char* name, const DLTensor* t, Format f, int64_t batch, int64_t rows, int64_t cols,
                           const char* rows_name, const char* cols_name, bool vector_rows) {
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

// An int32 [E] per-expert vector (offsets / counts).
StatusOr<const int32_t*> check_group_rows(const Who& n, const DLTensor* t, int64_t experts, int device,
                                          const char* meaning) {
  KILN_RETURN_IF_ERROR(check_same_device(n, t, device));
  if (!(t->dtype.code == kDLInt && t->dtype.bits == 32 && t->dtype.lanes == 1))
    return InvalidArgument(n() + ": dtype " + dtype_name(t->dtype) + "; expected int32 (" + meaning + ")");
  if (t->ndim != 1 || t->shape[0] != experts)
    return InvalidArgument(n() + ": " + std::to_string(t->ndim) + "-D with " + std::to_string(numel(t)) +
                           " elements; expected 1-D [" + to_string(experts) + "] (" + meaning + ")");
  if (!contiguous(t)) return InvalidArgument(n() + ": not contiguous (stride 1 expected)");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (addr % 4 != 0) return InvalidArgument(n() + ": data address is not 4-byte aligned");
  return reinterpret_cast<const int32_t*>(addr);
}

}  // namespace kiln::operands_internal

#include "runtime/operands.hpp"

#include <string>

namespace kiln {

namespace {

// DLPack >= 1.1 type codes, accepted by value (Debian ships DLPack 0.6 without them).
constexpr uint8_t kDLFloat8E4m3fn = 10;
constexpr uint8_t kDLFloat8E5m2 = 12;

std::string dtype_name(DLDataType t) {
  std::string base;
  switch (t.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLFloat8E4m3fn: return "float8_e4m3fn";
    case kDLFloat8E5m2: return "float8_e5m2";
    default: base = "code" + std::to_string(t.code) + "_"; break;
  }
  std::string s = base + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

bool dtype_matches(Format f, DLDataType t) {
  if (t.lanes != 1) return false;
  switch (f) {
    case Format::kBf16: return t.code == kDLBfloat && t.bits == 16;
    case Format::kF16: return t.code == kDLFloat && t.bits == 16;
    case Format::kF32: return t.code == kDLFloat && t.bits == 32;
    case Format::kE4m3: return t.bits == 8 && (t.code == kDLUInt || t.code == kDLInt || t.code == kDLFloat8E4m3fn);
    case Format::kE5m2: return t.bits == 8 && (t.code == kDLUInt || t.code == kDLInt || t.code == kDLFloat8E5m2);
    default: return false;
  }
}

std::string expected_dtype(Format f) {
  switch (f) {
    case Format::kBf16: return "bfloat16";
    case Format::kF16: return "float16";
    case Format::kF32: return "float32";
    case Format::kE4m3: return "uint8 bytes, or DLPack float8_e4m3fn";
    case Format::kE5m2: return "uint8 bytes, or DLPack float8_e5m2";
    default: return std::string("a ") + format_name(f) + " view";
  }
}

// Checks a 2-D row-major matrix operand; returns its row stride in elements.
// Inputs (a, b) are read with 16-byte copies: rows on 16-byte boundaries. The output is written
// with element (or paired, where aligned) stores: any row stride >= N, element-aligned base.
StatusOr<int64_t> check_matrix(const char* name, const DLTensor* t, Format f, int64_t rows, int64_t cols,
                               bool rows_known, const char* rows_name, const char* cols_name,
                               bool vector_rows = true) {
  std::string n = std::string("operand ") + name;
  if (t == nullptr) return InvalidArgument(n + ": missing (NULL)");
  if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged) {
    return InvalidArgument(n + ": device type " + std::to_string(t->device.device_type) +
                           " is not CUDA (kDLCUDA = 2); kiln runs on CUDA device memory");
  }
  if (!dtype_matches(f, t->dtype)) {
    return InvalidArgument(n + ": dtype " + dtype_name(t->dtype) + " but the spec says " + name + "=" +
                           format_name(f) + " (" + expected_dtype(f) + ")");
  }
  if (t->ndim != 2) {
    return InvalidArgument(n + ": " + std::to_string(t->ndim) + "-D tensor; expected 2-D [" + rows_name + ", " +
                           cols_name + "]");
  }
  if (rows_known && t->shape[0] != rows) {
    return InvalidArgument(n + ": shape[0] = " + std::to_string(t->shape[0]) + " but " + rows_name + " = " +
                           std::to_string(rows));
  }
  if (t->shape[1] != cols) {
    return InvalidArgument(n + ": shape[1] = " + std::to_string(t->shape[1]) + " but the plan has " + cols_name +
                           " = " + std::to_string(cols));
  }
  int64_t elem_bytes = t->dtype.bits / 8;
  int64_t ld = cols;
  if (t->strides != nullptr) {
    if (t->strides[1] != 1 && t->shape[1] > 1) {
      return InvalidArgument(n + ": inner stride " + std::to_string(t->strides[1]) +
                             "; kiln needs the last dimension contiguous (stride 1), e.g. call .contiguous()");
    }
    ld = t->strides[0];
    if (t->shape[0] > 1 && ld < cols) {
      return InvalidArgument(n + ": row stride " + std::to_string(ld) + " is smaller than the row length " +
                             std::to_string(cols));
    }
    if (t->shape[0] <= 1) ld = cols;
  }
  const int64_t align = vector_rows ? 16 : elem_bytes;
  if (vector_rows && (ld * elem_bytes) % 16 != 0) {
    return InvalidArgument(n + ": row stride " + std::to_string(ld) + " elements = " + std::to_string(ld * elem_bytes) +
                           " bytes; rows must start on 16-byte boundaries (a multiple of " +
                           std::to_string(16 / elem_bytes) + " elements)");
  }
  uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (addr % align != 0) {
    return InvalidArgument(n + ": data address 0x" + ([&] {
                             char buf[32];
                             snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(addr));
                             return std::string(buf);
                           })() + " is not " + std::to_string(align) + "-byte aligned");
  }
  return ld;
}

StatusOr<const float*> check_scale(const char* name, const DLTensor* t, const OperandSpec& op, int device) {
  std::string n = std::string("operand ") + name;
  if (op.scale == ScaleGranularity::kNone) {
    if (t != nullptr) {
      return InvalidArgument(n + ": given, but the operand's format " + format_name(op.format) + " takes no scale");
    }
    return static_cast<const float*>(nullptr);
  }
  if (op.scale != ScaleGranularity::kTensor) {
    return Unsupported(n + ": scale granularity " + scale_granularity_name(op.scale) +
                       " is not implemented by this release's kernels (tensor scales only)");
  }
  if (t == nullptr) {
    return InvalidArgument(n + ": missing; the spec's " + format_name(op.format) +
                           ":tensor needs one f32 scale on the device (decode scale: x = q * s)");
  }
  if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged) {
    return InvalidArgument(n + ": must be on the CUDA device (graph-safe: never a host float)");
  }
  if (t->device.device_id != device) {
    return InvalidArgument(n + ": on device " + std::to_string(t->device.device_id) + " but operand a is on device " +
                           std::to_string(device));
  }
  if (!(t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1)) {
    return InvalidArgument(n + ": dtype " + dtype_name(t->dtype) + "; expected float32");
  }
  int64_t numel = 1;
  for (int i = 0; i < t->ndim; ++i) numel *= t->shape[i];
  if (numel != 1) {
    return InvalidArgument(n + ": " + std::to_string(numel) + " elements; a tensor scale has exactly 1");
  }
  uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (addr % 4 != 0) return InvalidArgument(n + ": data address is not 4-byte aligned");
  return reinterpret_cast<const float*>(addr);
}

}  // namespace

StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops) {
  CheckedOperands c;
  KILN_ASSIGN_OR_RETURN(c.lda, check_matrix("a", ops.a, spec.a.format, 0, sizes.k, false, "M", "K"));
  c.m = ops.a->shape[0];
  c.device = ops.a->device.device_id;
  KILN_ASSIGN_OR_RETURN(c.ldb, check_matrix("b", ops.b, spec.b.format, sizes.n, sizes.k, true, "N", "K"));
  KILN_ASSIGN_OR_RETURN(c.ldc, check_matrix("out", ops.out, spec.out.format, c.m, sizes.n, true, "M", "N",
                                            /*vector_rows=*/false));
  if (ops.b->device.device_id != c.device || ops.out->device.device_id != c.device) {
    return InvalidArgument("operands a, b and out must be on one device; found devices " +
                           std::to_string(c.device) + ", " + std::to_string(ops.b->device.device_id) + ", " +
                           std::to_string(ops.out->device.device_id));
  }
  if (c.m > INT32_MAX) return InvalidArgument("operand a: M = " + std::to_string(c.m) + " exceeds 2^31 - 1");
  KILN_ASSIGN_OR_RETURN(c.a_scale, check_scale("a_scale", ops.a_scale, spec.a, c.device));
  KILN_ASSIGN_OR_RETURN(c.b_scale, check_scale("b_scale", ops.b_scale, spec.b, c.device));
  c.a = reinterpret_cast<const char*>(ops.a->data) + ops.a->byte_offset;
  c.b = reinterpret_cast<const char*>(ops.b->data) + ops.b->byte_offset;
  c.out = reinterpret_cast<char*>(ops.out->data) + ops.out->byte_offset;
  return c;
}

}  // namespace kiln

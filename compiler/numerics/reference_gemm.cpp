// CPU reference GEMM (reference_gemm.hpp).
#include "compiler/numerics/reference_gemm.hpp"

#include <limits>
#include <string>

#include "compiler/numerics/fp8.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln::numerics {
namespace {

bool element_supported(Format f) { return format_is_high_precision(f) || format_is_fp8(f); }

Status check_operand(const char* name, const OperandSpec& o, const float* scale) {
  if (!element_supported(o.format))
    return Unsupported(std::string("reference_gemm: operand ") + name + " format " + format_name(o.format) +
                       " is not supported yet; supported: bf16, f16, f32, e4m3, e5m2");
  if (format_is_fp8(o.format)) {
    if (o.scale != ScaleGranularity::kTensor || o.scale_type != ScaleType::kF32)
      return Unsupported(std::string("reference_gemm: operand ") + name + " scale " +
                         scale_granularity_name(o.scale) + "/" + scale_type_name(o.scale_type) +
                         " is not supported yet; supported: tensor/f32");
    if (scale == nullptr)
      return InvalidArgument(std::string("reference_gemm: operand ") + name + " is " + format_name(o.format) +
                             " with a tensor scale, but its scale pointer is null");
  }
  return Status::Ok();
}

}  // namespace

double decode_element(Format f, const void* data, int64_t i) {
  switch (f) {
    case Format::kBf16:
      return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
    case Format::kF16:
      return f16_to_float(static_cast<const uint16_t*>(data)[i]);
    case Format::kF32:
      return static_cast<const float*>(data)[i];
    case Format::kE4m3:
      return e4m3_to_float(static_cast<const uint8_t*>(data)[i]);
    case Format::kE5m2:
      return e5m2_to_float(static_cast<const uint8_t*>(data)[i]);
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

namespace {

// The backward passes of two 16-bit operands (compiler/plan/gemm_view.hpp), in the forward's sizes:
//   dgrad  out = dX [M, K]:  dX[i, j] = sum_r dY[i, r] * W[r, j]   (a = dY [M, N], b = W [N, K])
//   wgrad  out = dW [N, K]:  dW[i, j] = sum_t dY[t, i] * X[t, j]   (a = dY [M, N], b = X [M, K])
Status reference_backward(const KernelSpec& spec, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                          const void* b, int64_t ldb, std::vector<double>& out) {
  const std::string pass = pass_name(spec.pass);
  if (!format_is_high_precision(spec.a.format) || !format_is_high_precision(spec.b.format) ||
      !format_is_high_precision(spec.out.format))
    return Unsupported("reference_gemm: pass " + pass + " takes bf16 / f16 / f32 operands and output (mode "
                       "high_precision); quantized backward operands are reference_gemm_quantized's");
  constexpr int64_t kMaxDim = int64_t{1} << 31;
  if (m < 1 || n < 1 || k < 1 || m > kMaxDim || n > kMaxDim || k > kMaxDim || m * n > (int64_t{1} << 34) ||
      n * k > (int64_t{1} << 34) || m * k > (int64_t{1} << 34))
    return InvalidArgument("reference_gemm: sizes M=" + std::to_string(m) + " N=" + std::to_string(n) +
                           " K=" + std::to_string(k) + " must each be in 1..2^31 with products below 2^34");
  if (lda < n) return InvalidArgument("reference_gemm: lda=" + std::to_string(lda) + " is below N=" + std::to_string(n));
  if (ldb < k) return InvalidArgument("reference_gemm: ldb=" + std::to_string(ldb) + " is below K=" + std::to_string(k));
  if (a == nullptr || b == nullptr) return InvalidArgument("reference_gemm: operand a or b is null");
  const bool dgrad = spec.pass == Pass::kDgrad;
  const int64_t rows = dgrad ? m : n, red = dgrad ? n : m;
  // Both operands decoded once, as [reduction, columns] (dgrad: W; wgrad: X) and [reduction, rows] (dY).
  std::vector<double> bd(static_cast<size_t>(red * k)), ad(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < red; ++r)
    for (int64_t j = 0; j < k; ++j) bd[static_cast<size_t>(r * k + j)] = decode_element(spec.b.format, b, r * ldb + j);
  for (int64_t t = 0; t < m; ++t)
    for (int64_t i = 0; i < n; ++i) ad[static_cast<size_t>(t * n + i)] = decode_element(spec.a.format, a, t * lda + i);
  out.assign(static_cast<size_t>(rows * k), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    double* o = &out[static_cast<size_t>(i * k)];
    for (int64_t r = 0; r < red; ++r) {
      const double x = dgrad ? ad[static_cast<size_t>(i * n + r)] : ad[static_cast<size_t>(r * n + i)];
      const double* br = &bd[static_cast<size_t>(r * k)];
      for (int64_t j = 0; j < k; ++j) o[j] += x * br[j];
    }
  }
  return Status::Ok();
}

}  // namespace

Status reference_gemm(const KernelSpec& spec, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                      const void* b, int64_t ldb, const float* a_scale, const float* b_scale,
                      std::vector<double>& out) {
  KILN_RETURN_IF_ERROR(validate_spec(spec));
  if (spec.op != Op::kGemm)
    return Unsupported(std::string("reference_gemm: op ") + op_name(spec.op) +
                       " is not supported yet; supported: gemm");
  if (spec.pass != Pass::kFprop) return reference_backward(spec, m, n, k, a, lda, b, ldb, out);
  KILN_RETURN_IF_ERROR(check_operand("a", spec.a, a_scale));
  KILN_RETURN_IF_ERROR(check_operand("b", spec.b, b_scale));
  if (!format_is_high_precision(spec.out.format))
    return Unsupported(std::string("reference_gemm: out format ") + format_name(spec.out.format) +
                       " is not supported yet; supported: bf16, f16, f32");
  constexpr int64_t kMaxDim = int64_t{1} << 31;
  if (m < 1 || n < 1 || k < 1 || m > kMaxDim || n > kMaxDim || k > kMaxDim)
    return InvalidArgument("reference_gemm: sizes M=" + std::to_string(m) + " N=" + std::to_string(n) +
                           " K=" + std::to_string(k) + " must each be in 1..2^31");
  if (m * n > (int64_t{1} << 34) || n * k > (int64_t{1} << 34))
    return InvalidArgument("reference_gemm: M*N=" + std::to_string(m * n) + " or N*K=" +
                           std::to_string(n * k) + " exceeds the reference's 2^34 element limit");
  if (lda < k)
    return InvalidArgument("reference_gemm: lda=" + std::to_string(lda) + " is below K=" + std::to_string(k));
  if (ldb < k)
    return InvalidArgument("reference_gemm: ldb=" + std::to_string(ldb) + " is below K=" + std::to_string(k));
  if (a == nullptr || b == nullptr) return InvalidArgument("reference_gemm: operand a or b is null");

  const double sa = format_is_fp8(spec.a.format) ? static_cast<double>(*a_scale) : 1.0;
  const double sb = format_is_fp8(spec.b.format) ? static_cast<double>(*b_scale) : 1.0;
  // Decode B once: it is reread for every row of A.
  std::vector<double> bd(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk)
      bd[static_cast<size_t>(j * k + kk)] = decode_element(spec.b.format, b, j * ldb + kk);
  std::vector<double> row(static_cast<size_t>(k));
  out.assign(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t kk = 0; kk < k; ++kk)
      row[static_cast<size_t>(kk)] = decode_element(spec.a.format, a, i * lda + kk);
    for (int64_t j = 0; j < n; ++j) {
      const double* bj = &bd[static_cast<size_t>(j * k)];
      double acc = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) acc += row[static_cast<size_t>(kk)] * bj[kk];
      out[static_cast<size_t>(i * n + j)] = acc * sa * sb;
    }
  }
  return Status::Ok();
}

double round_to_format(double v, Format out) {
  const float f = static_cast<float>(v);  // RNE on IEEE hosts
  switch (out) {
    case Format::kF32:
      return f;
    case Format::kBf16:
      return bf16_to_float(bf16_from_float(f));
    case Format::kF16:
      return f16_to_float(f16_from_float(f));
    case Format::kE4m3:
      return e4m3_to_float(e4m3_from_float(f, /*saturate=*/true));
    case Format::kE5m2:
      return e5m2_to_float(e5m2_from_float(f, /*saturate=*/true));
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

}  // namespace kiln::numerics

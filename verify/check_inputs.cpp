// Random operands in a spec's formats (check_inputs.hpp).
#include "verify/check_inputs.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/fp8_block.hpp"
#include "compiler/numerics/mx.hpp"
#include "compiler/numerics/nvfp4.hpp"
#include "compiler/plan/gemm_view.hpp"

namespace kiln {
namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [-range, range), never exactly zero in bulk.
float uniform(uint64_t& s, float range) {
  double u = static_cast<double>(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
  return static_cast<float>((2.0 * u - 1.0) * range);
}

int rand_int(uint64_t& s, int lo, int hi) { return lo + static_cast<int>(splitmix(s) % uint64_t(hi - lo + 1)); }

// Large operands are drawn in parallel (the tuner draws one per shape, and a grouped weight of
// E x N x K = 530 M elements took most of a shape's budget on one core): rows split into chunks, each
// drawn from its own seed derived from the caller's, so a seed still fixes the values (whatever the
// thread count: the chunking depends on the sizes only). Below kParallelElements the single-stream
// draw of the first release is kept, so small checks draw the same numbers as before.
constexpr int64_t kParallelElements = int64_t{1} << 23;
constexpr int64_t kChunks = 64;

uint64_t chunk_seed(uint64_t base, int64_t chunk) {
  uint64_t s = base ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(chunk + 1));
  return splitmix(s) | 1;
}

// Runs fn(chunk, first_row, end_row) for row chunks of `rows` (boundaries multiples of `align`) on up to
// hardware_concurrency threads.
void parallel_rows(int64_t rows, int64_t align, const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  const int64_t per = std::max<int64_t>(align, (rows / kChunks + align - 1) / align * align);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t r = 0; r < rows; r += per) chunks.emplace_back(r, std::min(rows, r + per));
  const unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 32u));
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < chunks.size();) fn(static_cast<int64_t>(i), chunks[i].first, chunks[i].second);
    });
  }
  for (auto& t : pool) t.join();
}

constexpr DLDataType kU8{kDLUInt, 8, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

DLDataType dtype_of(Format f) {
  switch (f) {
    case Format::kBf16: return {kDLBfloat, 16, 1};
    case Format::kF16: return {kDLFloat, 16, 1};
    case Format::kF32: return kF32;
    default: return kU8;
  }
}

// Random elements of format f, stored as the kernel reads them (the first release's generator: the
// 16-bit and per-tensor FP8 checks draw exactly the same numbers as before).
void random_codes_into(Format f, int64_t n, uint64_t& s, uint8_t* dst);

std::vector<uint8_t> random_codes(Format f, int64_t rows, int64_t cols, uint64_t& s) {
  const int eb = format_bits(f) / 8;
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols * eb));
  if (rows * cols < kParallelElements) {
    random_codes_into(f, rows * cols, s, out.data());
    return out;
  }
  const uint64_t base = splitmix(s);
  parallel_rows(rows, 1, [&](int64_t chunk, int64_t r0, int64_t r1) {
    uint64_t cs = chunk_seed(base, chunk);
    random_codes_into(f, (r1 - r0) * cols, cs, out.data() + r0 * cols * eb);
  });
  return out;
}

void random_codes_into(Format f, int64_t n, uint64_t& s, uint8_t* dst) {
  switch (f) {
    case Format::kBf16: {
      auto* p = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = numerics::bf16_from_float(uniform(s, 2.f));
      break;
    }
    case Format::kF16: {
      auto* p = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = numerics::f16_from_float(uniform(s, 2.f));
      break;
    }
    case Format::kF32: {
      auto* p = reinterpret_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = uniform(s, 2.f);
      break;
    }
    case Format::kE4m3:
      for (int64_t i = 0; i < n; ++i) dst[i] = numerics::e4m3_from_float(uniform(s, 8.f), true);
      break;
    case Format::kE5m2:
      for (int64_t i = 0; i < n; ++i) dst[i] = numerics::e5m2_from_float(uniform(s, 8.f), true);
      break;
    default:
      break;
  }
}

// Random real values whose magnitude varies per row (2^-3..2^3) and per 32-K block (2^-2..2^2), so
// that row and block scales differ.
std::vector<float> random_values(int64_t rows, int64_t cols, uint64_t& s) {
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float rf = std::ldexp(1.0f, rand_int(s, -3, 3));
    float bf = 1.0f;
    for (int64_t c = 0; c < cols; ++c) {
      if (c % 32 == 0) bf = std::ldexp(1.0f, rand_int(s, -2, 2));
      x[static_cast<size_t>(r * cols + c)] = uniform(s, 1.0f) * rf * bf;
    }
  }
  return x;
}

template <class T>
HostTensor tensor_of(const std::vector<T>& v, std::vector<int64_t> shape, DLDataType dt) {
  HostTensor t;
  t.bytes.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  t.shape = std::move(shape);
  t.dtype = dt;
  return t;
}

// Positive random f32 scales (0.5 .. 2 times a power of two in 2^-2 .. 2^2).
std::vector<float> random_scales(int64_t count, uint64_t& s) {
  std::vector<float> v(static_cast<size_t>(count));
  for (auto& x : v) x = (0.5f + std::fabs(uniform(s, 1.5f))) * std::ldexp(1.0f, rand_int(s, -2, 2));
  return v;
}

// An FP8 operand with row / block scales: quantized by fp8_block_quantize (e4m3), or random codes with
// random scales (e5m2, which the numerics library does not block-quantize).
Status fp8_scaled(const OperandSpec& o, int64_t rows, int64_t k, uint64_t& s, HostTensor& data, HostTensor& scale,
                  std::vector<int64_t> data_shape) {
  using numerics::Fp8Blocking;
  // The planner takes block scales only with K % 128 == 0 (the scale tensors are [rows, K / 128]); the
  // quantizer would write ceil(K / 128) columns into a K / 128 one.
  if ((o.scale == ScaleGranularity::kBlock1x128 || o.scale == ScaleGranularity::kBlock128x128) && k % 128 != 0)
    return InvalidArgument(std::string("random operands: ") + format_name(o.format) + " block scales need K % 128 == 0, got K = " +
                           std::to_string(k));
  int64_t srows = rows, scols = 1;
  Fp8Blocking blocking = Fp8Blocking::kRow;
  if (o.scale == ScaleGranularity::kBlock1x128) {
    blocking = Fp8Blocking::kBlock1x128;
    scols = k / 128;
  } else if (o.scale == ScaleGranularity::kBlock128x128) {
    blocking = Fp8Blocking::kBlock128x128;
    srows = (rows + 127) / 128;
    scols = k / 128;
  }
  const bool vector = o.scale == ScaleGranularity::kM || o.scale == ScaleGranularity::kN;
  std::vector<int64_t> sshape = vector ? std::vector<int64_t>{rows} : std::vector<int64_t>{srows, scols};
  if (o.format == Format::kE4m3) {
    numerics::Fp8BlockOptions opt;
    opt.blocking = blocking;
    opt.scale_type = o.scale_type;
    if (rows * k >= kParallelElements) {
      // Row chunks (whole 128-row scale blocks for 128x128) drawn and quantized in parallel: the
      // quantizer's rows are independent, so the chunks' data and scales concatenate.
      const int64_t align = blocking == Fp8Blocking::kBlock128x128 ? 128 : 1;
      const int64_t scale_per_row = blocking == Fp8Blocking::kRow ? 1 : scols;  // scale elements per (block) row
      const bool f32 = o.scale_type == ScaleType::kF32;
      std::vector<uint8_t> codes(static_cast<size_t>(rows * k));
      std::vector<float> sf(f32 ? static_cast<size_t>(srows * scols) : 0);
      std::vector<uint8_t> sb(f32 ? 0 : static_cast<size_t>(srows * scols));
      std::atomic<bool> failed{false};
      const uint64_t base = splitmix(s);
      parallel_rows(rows, align, [&](int64_t chunk, int64_t r0, int64_t r1) {
        uint64_t cs = chunk_seed(base, chunk);
        const std::vector<float> x = random_values(r1 - r0, k, cs);
        auto q = numerics::fp8_block_quantize(x, r1 - r0, k, opt);
        if (!q.ok()) {
          failed = true;
          return;
        }
        std::memcpy(codes.data() + r0 * k, q->data.data(), q->data.size());
        const int64_t s0 = (r0 / align) * scale_per_row;
        if (f32) {
          std::memcpy(sf.data() + s0, q->scales_f32.data(), q->scales_f32.size() * sizeof(float));
        } else {
          std::memcpy(sb.data() + s0, q->scale_bytes.data(), q->scale_bytes.size());
        }
      });
      if (failed) return Internal("fp8_scaled: fp8_block_quantize failed on a chunk");
      data = tensor_of(codes, std::move(data_shape), kU8);
      scale = f32 ? tensor_of(sf, sshape, kF32) : tensor_of(sb, sshape, kU8);
      return Status::Ok();
    }
    const std::vector<float> x = random_values(rows, k, s);
    KILN_ASSIGN_OR_RETURN(numerics::QuantizedTensor q, numerics::fp8_block_quantize(x, rows, k, opt));
    data = tensor_of(q.data, std::move(data_shape), kU8);
    scale = o.scale_type == ScaleType::kF32 ? tensor_of(q.scales_f32, sshape, kF32) : tensor_of(q.scale_bytes, sshape, kU8);
    return Status::Ok();
  }
  data = tensor_of(random_codes(o.format, rows, k, s), std::move(data_shape), kU8);
  if (o.scale_type == ScaleType::kF32) {
    scale = tensor_of(random_scales(srows * scols, s), sshape, kF32);
  } else {
    std::vector<uint8_t> b(static_cast<size_t>(srows * scols));
    for (auto& x : b) x = static_cast<uint8_t>(rand_int(s, 120, 130));
    scale = tensor_of(b, sshape, kU8);
  }
  return Status::Ok();
}

// An MX operand of `rows` rows (all experts stacked).
Status mx_operand(const KernelSpec& spec, Format f, int64_t rows, int64_t k, uint64_t& s, HostTensor& data,
                  HostTensor& scale, std::vector<int64_t> data_shape, std::vector<int64_t> scale_shape) {
  const std::vector<float> x = random_values(rows, k, s);
  KILN_ASSIGN_OR_RETURN(numerics::QuantizedTensor q, numerics::mx_quantize(x, rows, k, f, spec.mx_rounding));
  data = tensor_of(q.data, std::move(data_shape), kU8);
  scale = tensor_of(q.scale_bytes, std::move(scale_shape), kU8);
  return Status::Ok();
}

// NVFP4 weights [experts, n, k]: one global for all (nvfp4_global=tensor) or one per expert.
Status nvfp4_operand(const KernelSpec& spec, int64_t experts, int64_t n, int64_t k, uint64_t& s, HostOperands& h,
                     std::vector<int64_t> data_shape, std::vector<int64_t> scale_shape) {
  numerics::Nvfp4Options opt;
  opt.e4m3_bound = spec.e4m3_bound;
  opt.four_over_six = spec.four_over_six;
  const bool per_expert = spec.nvfp4_global == GlobalScale::kExpert;
  const int64_t groups = per_expert ? experts : 1;
  const int64_t rows = (experts * n) / groups;
  std::vector<uint8_t> data, scales;
  std::vector<float> globals;
  for (int64_t g = 0; g < groups; ++g) {
    const std::vector<float> x = random_values(rows, k, s);
    KILN_ASSIGN_OR_RETURN(numerics::QuantizedTensor q, numerics::nvfp4_quantize(x, rows, k, opt));
    data.insert(data.end(), q.data.begin(), q.data.end());
    scales.insert(scales.end(), q.scale_bytes.begin(), q.scale_bytes.end());
    globals.push_back(q.global_decode_scale);
  }
  h.b = tensor_of(data, std::move(data_shape), kU8);
  h.b_scale = tensor_of(scales, std::move(scale_shape), kU8);
  h.b_global = tensor_of(globals, {groups}, kF32);
  return Status::Ok();
}

}  // namespace

// Rows per expert: a random split of m rows (offsets) or random counts up to m (masked), about a
// quarter of the experts empty.
std::vector<int32_t> random_groups(bool masked, int experts, int64_t m, uint64_t& s) {
  std::vector<int32_t> counts(static_cast<size_t>(experts), 0);
  if (masked) {
    for (auto& c : counts) c = rand_int(s, 0, 3) == 0 ? 0 : rand_int(s, 1, static_cast<int>(std::max<int64_t>(m, 1)));
    counts[static_cast<size_t>(rand_int(s, 0, experts - 1))] = static_cast<int32_t>(m);  // one full expert
    return counts;
  }
  std::vector<double> w(static_cast<size_t>(experts));
  double total = 0;
  for (auto& x : w) {
    x = rand_int(s, 0, 3) == 0 ? 0.0 : 0.1 + std::fabs(uniform(s, 1.0f));
    total += x;
  }
  if (total == 0) {
    w[0] = 1;
    total = 1;
  }
  int64_t given = 0;
  for (int e = 0; e < experts; ++e) {
    counts[static_cast<size_t>(e)] = static_cast<int32_t>(std::floor(m * w[static_cast<size_t>(e)] / total));
    given += counts[static_cast<size_t>(e)];
  }
  for (int64_t r = given; r < m; ++r) {  // the rounding remainder to non-empty experts
    int e = rand_int(s, 0, experts - 1);
    while (w[static_cast<size_t>(e)] == 0) e = (e + 1) % experts;
    ++counts[static_cast<size_t>(e)];
  }
  return counts;
}

namespace {

// Grouped row vectors: random sizes (or the caller's), as offsets (cumulative ends) or masked counts.
Status group_vector(const KernelSpec& spec, int64_t m, const std::vector<int32_t>& group_rows, uint64_t& s,
                    HostOperands& h) {
  const bool masked = spec.layout == GroupLayout::kMasked;
  std::vector<int32_t> counts = group_rows.empty() ? random_groups(masked, spec.experts, m, s) : group_rows;
  if (static_cast<int64_t>(counts.size()) != spec.experts)
    return InvalidArgument("random_operands: " + std::to_string(counts.size()) + " group sizes for " +
                           std::to_string(spec.experts) + " experts");
  if (!masked) {  // counts -> cumulative ends
    int64_t end = 0;
    for (auto& c : counts) {
      end += c;
      c = static_cast<int32_t>(end);
    }
    if (end != m)
      return InvalidArgument("random_operands: group sizes sum to " + std::to_string(end) + ", not M = " +
                             std::to_string(m));
  }
  h.group_rows = tensor_of(counts, {static_cast<int64_t>(spec.experts)}, kI32);
  return Status::Ok();
}

// Backward passes (compiler/plan/gemm_view.hpp): a = dY [rows, N] (masked [E, max_m, N]); dgrad: b = W [N, K]
// (grouped [E, N, K]), out = dX [rows, K] (masked [E, max_m, K]); wgrad: b = X [rows, K] (masked [E, max_m,
// K]), out = dW [N, K] (grouped [E, N, K]). A quantized b (mode dequantized) is drawn as the forward draws
// it: W as the forward's b, X as the forward's a, with their scales.
Status random_backward_operands(const KernelSpec& spec, int64_t m, int64_t n, int64_t k,
                                const std::vector<int32_t>& group_rows, uint64_t& s, HostOperands& h) {
  // MXFP8 (backward_runs_forward_gemm): the forward's operands in the view's (m, n, k). dgrad: dY [M, N]
  // and W's column-wise copy [K, N] (grouped [E, K, N]) -> dX [M, K]; wgrad: dYᵀ [N, M] and Xᵀ [K, M] -> dW
  // [N, K]. h.rows stays the caller's rows.
  if (backward_runs_forward_gemm(spec)) {
    KernelSpec fwd = spec;
    fwd.pass = Pass::kFprop;
    fwd.accumulate = false;
    const GemmView v = gemm_view(spec, ProblemSizes{m, n, k});
    KILN_ASSIGN_OR_RETURN(HostOperands q, random_operands(fwd, v.m, v.n, v.k, group_rows, s));
    h.a = std::move(q.a);
    h.a_scale = std::move(q.a_scale);
    h.b = std::move(q.b);
    h.b_scale = std::move(q.b_scale);
    h.out = std::move(q.out);
    h.group_rows = std::move(q.group_rows);
    return Status::Ok();
  }
  // Quantized wgrad (dense): the column-wise copies dYᵀ [N, M] and Xᵀ [K, M], each row quantized along M
  // (1x128 blocks: M % 128 == 0); out = dW [N, K].
  if (wgrad_reads_columnwise(spec) && spec.op == Op::kGroupedGemm) {
    // Grouped: the grouped quantizer's padded copies dYᵀ [N, W] and Xᵀ [K, W], W = 128 (ceil(rows / 128) +
    // E): random codes and scales in each expert's blocks, zero codes in the padding of its last block,
    // and NaN codes (0x7F) in the columns past the last expert's blocks, which no reduction may read.
    const bool masked = spec.layout == GroupLayout::kMasked;
    std::vector<int32_t> counts = group_rows.empty() ? random_groups(masked, spec.experts, m, s) : group_rows;
    if (static_cast<int64_t>(counts.size()) != spec.experts)
      return InvalidArgument("random_operands: " + std::to_string(counts.size()) + " group sizes for " +
                             std::to_string(spec.experts) + " experts");
    const int64_t rows = h.rows;
    const int64_t w = 128 * ((rows + 127) / 128 + spec.experts);
    KILN_RETURN_IF_ERROR(fp8_scaled(spec.a, n, w, s, h.a, h.a_scale, {n, w}));
    KILN_RETURN_IF_ERROR(fp8_scaled(spec.b, k, w, s, h.b, h.b_scale, {k, w}));
    std::vector<uint8_t> col_kind(static_cast<size_t>(w), 2);  // 0: a token, 1: padding, 2: past the blocks
    int64_t at = 0;
    for (int32_t c : counts) {
      for (int64_t j = 0; j < (c + 127) / 128 * 128; ++j) col_kind[static_cast<size_t>(at + j)] = j < c ? 0 : 1;
      at += (c + 127) / 128 * 128;
    }
    for (HostTensor* t : {&h.a, &h.b}) {
      const int64_t r = t->shape[0];
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < w; ++j) {
          const uint8_t kind = col_kind[static_cast<size_t>(j)];
          if (kind != 0) t->bytes[static_cast<size_t>(i * w + j)] = kind == 1 ? 0x00 : 0x7F;
        }
    }
    const int64_t experts = spec.experts;
    h.out.bytes.assign(static_cast<size_t>(experts * n * k * (format_bits(spec.out.format) / 8)), 0xFF);
    h.out.shape = {experts, n, k};
    h.out.dtype = dtype_of(spec.out.format);
    return group_vector(spec, m, counts, s, h);
  }
  if (wgrad_reads_columnwise(spec)) {
    KILN_RETURN_IF_ERROR(fp8_scaled(spec.a, n, m, s, h.a, h.a_scale, {n, m}));
    KILN_RETURN_IF_ERROR(fp8_scaled(spec.b, k, m, s, h.b, h.b_scale, {k, m}));
    h.out.bytes.assign(static_cast<size_t>(n * k * (format_bits(spec.out.format) / 8)), 0xFF);
    h.out.shape = {n, k};
    h.out.dtype = dtype_of(spec.out.format);
    return Status::Ok();
  }
  const bool quantized_dgrad = dgrad_reads_transposed_w(spec);
  if (!format_is_high_precision(spec.a.format) && !quantized_dgrad)
    return Unsupported(std::string("random_operands: pass=") + pass_name(spec.pass) + " dY is drawn in bf16 / f16");
  const bool grouped = spec.op == Op::kGroupedGemm;
  const bool masked = spec.layout == GroupLayout::kMasked;
  const int64_t experts = grouped ? spec.experts : 1;
  const int64_t rows = h.rows;
  const bool dgrad = spec.pass == Pass::kDgrad;
  // Quantized dgrad: dY [rows, N] drawn as a forward's X quantized along N (its scales [rows, N/128], [rows]
  // or [1]), with the grouped row vector; W below as the forward's b, for the same group sizes.
  std::vector<int32_t> counts = group_rows;
  if (quantized_dgrad && grouped && counts.empty())
    counts = random_groups(masked, spec.experts, m, s);
  if (quantized_dgrad) {
    KernelSpec fwd = spec;
    fwd.pass = Pass::kFprop;
    fwd.b = OperandSpec{Format::kBf16, ScaleGranularity::kNone, ScaleType::kNone};
    fwd.out = fwd.b;
    KILN_ASSIGN_OR_RETURN(HostOperands q, random_operands(fwd, m, 8, n, counts, s));
    h.a = std::move(q.a);
    h.a_scale = std::move(q.a_scale);
    h.group_rows = std::move(q.group_rows);
  }
  if (!format_is_high_precision(spec.b.format)) {
    KernelSpec fwd = spec;
    fwd.pass = Pass::kFprop;
    fwd.epilogue.clear();
    fwd.gate_up = GateUp::kNone;
    const OperandSpec plain{Format::kBf16, ScaleGranularity::kNone, ScaleType::kNone};
    fwd.out = plain;
    fwd.a = dgrad ? plain : spec.b;
    fwd.b = dgrad ? spec.b : plain;
    KILN_ASSIGN_OR_RETURN(HostOperands q, random_operands(fwd, m, dgrad ? n : 8, k, counts, s));
    h.b = dgrad ? std::move(q.b) : std::move(q.a);
    h.b_scale = dgrad ? std::move(q.b_scale) : std::move(q.a_scale);
    h.b_global = std::move(q.b_global);
    if (!quantized_dgrad) h.group_rows = std::move(q.group_rows);
  }
  if (!quantized_dgrad)
    h.a = tensor_of(random_codes(spec.a.format, rows, n, s),
                    masked ? std::vector<int64_t>{experts, m, n} : std::vector<int64_t>{rows, n}, dtype_of(spec.a.format));
  const int ob = format_bits(spec.out.format) / 8;
  if (format_is_high_precision(spec.b.format) && dgrad) {
    h.b = tensor_of(random_codes(spec.b.format, experts * n, k, s),
                    grouped ? std::vector<int64_t>{experts, n, k} : std::vector<int64_t>{n, k}, dtype_of(spec.b.format));
  } else if (format_is_high_precision(spec.b.format)) {
    h.b = tensor_of(random_codes(spec.b.format, rows, k, s),
                    masked ? std::vector<int64_t>{experts, m, k} : std::vector<int64_t>{rows, k}, dtype_of(spec.b.format));
  }
  // dX [rows, K] (masked [E, max_m, K]); dW [N, K] (grouped [E, N, K]).
  const int64_t out_rows = dgrad ? rows : n * experts;
  h.out.bytes.assign(static_cast<size_t>(out_rows * k * ob), 0xFF);
  h.out.shape = dgrad ? (masked ? std::vector<int64_t>{experts, m, k} : std::vector<int64_t>{rows, k})
                      : (grouped ? std::vector<int64_t>{experts, n, k} : std::vector<int64_t>{n, k});
  h.out.dtype = dtype_of(spec.out.format);
  if (grouped && h.group_rows.bytes.empty()) return group_vector(spec, m, group_rows, s, h);
  return Status::Ok();
}

}  // namespace

HostOperands transposed_w_operands(const KernelSpec& spec, const HostOperands& h, int64_t n, int64_t k) {
  HostOperands t = h;
  const bool grouped = spec.op == Op::kGroupedGemm;
  const int64_t experts = grouped ? spec.experts : 1;
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c)
        t.b.bytes[static_cast<size_t>((e * k + c) * n + r)] = h.b.bytes[static_cast<size_t>((e * n + r) * k + c)];
  t.b.shape = grouped ? std::vector<int64_t>{experts, k, n} : std::vector<int64_t>{k, n};
  if (spec.b.scale == ScaleGranularity::kBlock128x128) {
    const int64_t nb = (n + 127) / 128, kb = (k + 127) / 128;
    const size_t eb = spec.b.scale_type == ScaleType::kUe8m0 ? 1 : 4;
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t i = 0; i < nb; ++i)
        for (int64_t j = 0; j < kb; ++j)
          std::memcpy(t.b_scale.bytes.data() + static_cast<size_t>((e * kb + j) * nb + i) * eb,
                      h.b_scale.bytes.data() + static_cast<size_t>((e * nb + i) * kb + j) * eb, eb);
    t.b_scale.shape = grouped ? std::vector<int64_t>{experts, kb, nb} : std::vector<int64_t>{kb, nb};
  }
  return t;
}

StatusOr<HostOperands> random_operands(const KernelSpec& spec, int64_t m, int64_t n, int64_t k,
                                       const std::vector<int32_t>& group_rows, uint64_t& s) {
  HostOperands h;
  h.layout = spec.layout;
  const bool grouped = spec.op == Op::kGroupedGemm;
  const bool masked = spec.layout == GroupLayout::kMasked;
  const int64_t experts = grouped ? spec.experts : 1;
  h.max_m = masked ? m : 0;
  h.rows = masked ? m * experts : m;
  const int64_t rows = h.rows;
  const OperandSpec& a = spec.a;
  const OperandSpec& b = spec.b;
  if (spec.pass != Pass::kFprop) {
    KILN_RETURN_IF_ERROR(random_backward_operands(spec, m, n, k, group_rows, s, h));
    return h;
  }

  // a: X [rows, K] (masked: [E, max_m, K]).
  std::vector<int64_t> a_shape = masked ? std::vector<int64_t>{experts, m, k} : std::vector<int64_t>{rows, k};
  const bool a_plain = format_is_high_precision(a.format) || (format_is_fp8(a.format) && a.scale == ScaleGranularity::kTensor);
  if (a_plain) {
    h.a = tensor_of(random_codes(a.format, rows, k, s), a_shape, dtype_of(a.format));
  } else if (format_is_fp8(a.format)) {
    KILN_RETURN_IF_ERROR(fp8_scaled(a, rows, k, s, h.a, h.a_scale, a_shape));
  } else if (a.format == Format::kMxfp8) {
    KILN_RETURN_IF_ERROR(mx_operand(spec, a.format, rows, k, s, h.a, h.a_scale, a_shape, {rows, k / 32}));
  } else {
    return Unsupported(std::string("random_operands: a=") + format_name(a.format) + " is not generated");
  }

  // b: W [N, K] (grouped: [E, N, K]; packed FP4: K/2 bytes).
  const int64_t b_cols = format_bits(b.format) == 4 ? k / 2 : k;
  std::vector<int64_t> b_shape = grouped ? std::vector<int64_t>{experts, n, b_cols} : std::vector<int64_t>{n, b_cols};
  auto lead = [&](std::vector<int64_t> v) {
    if (grouped) v.insert(v.begin(), experts);
    return v;
  };
  const bool b_plain = format_is_high_precision(b.format) || (format_is_fp8(b.format) && b.scale == ScaleGranularity::kTensor);
  if (b_plain) {
    h.b = tensor_of(random_codes(b.format, experts * n, k, s), b_shape, dtype_of(b.format));
  } else if (format_is_fp8(b.format)) {
    if (!grouped) {
      KILN_RETURN_IF_ERROR(fp8_scaled(b, n, k, s, h.b, h.b_scale, b_shape));
    } else {
      // Each expert quantized on its own (its 128x128 blocks start at its row 0), then stacked.
      for (int64_t e = 0; e < experts; ++e) {
        HostTensor d, sc;
        KILN_RETURN_IF_ERROR(fp8_scaled(b, n, k, s, d, sc, {n, k}));
        h.b.bytes.insert(h.b.bytes.end(), d.bytes.begin(), d.bytes.end());
        h.b_scale.bytes.insert(h.b_scale.bytes.end(), sc.bytes.begin(), sc.bytes.end());
        h.b_scale.dtype = sc.dtype;
        if (e == 0) h.b_scale.shape = lead(sc.shape);
      }
      h.b.shape = b_shape;
      h.b.dtype = kU8;
      // Per-channel scales travel as one [E * N] vector (runtime/operands.hpp).
      if (b.scale == ScaleGranularity::kN) h.b_scale.shape = {experts * n};
    }
  } else if (b.format == Format::kMxfp4 || b.format == Format::kMxfp8) {
    KILN_RETURN_IF_ERROR(mx_operand(spec, b.format, experts * n, k, s, h.b, h.b_scale, b_shape, lead({n, k / 32})));
  } else if (b.format == Format::kNvfp4) {
    KILN_RETURN_IF_ERROR(nvfp4_operand(spec, experts, n, k, s, h, b_shape, lead({n, k / 16})));
  } else {
    return Unsupported(std::string("random_operands: b=") + format_name(b.format) + " is not generated");
  }

  // Per-tensor FP8 scales last, as the first release drew them.
  if (a.scale == ScaleGranularity::kTensor || b.scale == ScaleGranularity::kTensor) {
    const float sa = a.scale == ScaleGranularity::kNone ? 1.f : 0.5f + std::fabs(uniform(s, 1.5f));
    const float sb = b.scale == ScaleGranularity::kNone ? 1.f : 0.5f + std::fabs(uniform(s, 1.5f));
    if (a.scale == ScaleGranularity::kTensor) h.a_scale = tensor_of(std::vector<float>{sa}, {1}, kF32);
    if (b.scale == ScaleGranularity::kTensor) {
      // Grouped weights: one tensor scale per expert.
      std::vector<float> sbs{sb};
      for (int64_t e = 1; e < experts; ++e) sbs.push_back(0.5f + std::fabs(uniform(s, 1.5f)));
      h.b_scale = tensor_of(sbs, {experts}, kF32);
    }
  }

  // out: Y [rows, N] (masked: [E, max_m, N]); N / 2 columns for a gate|up GLU.
  const int ob = format_bits(spec.out.format) / 8;
  const int64_t n_out = spec.gate_up != GateUp::kNone ? n / 2 : n;
  h.out.bytes.assign(static_cast<size_t>(rows * n_out * ob), 0xFF);
  h.out.shape = masked ? std::vector<int64_t>{experts, m, n_out} : std::vector<int64_t>{rows, n_out};
  h.out.dtype = dtype_of(spec.out.format);

  if (grouped) KILN_RETURN_IF_ERROR(group_vector(spec, m, group_rows, s, h));

  // The epilogue's vectors, drawn last so specs without one draw what they did.
  KILN_ASSIGN_OR_RETURN(std::optional<EpilogueProgram> program, spec_epilogue_program(spec));
  if (program) {
    h.ep_operands = program->operands;
    for (const EpilogueOperand& eo : program->operands) {
      std::vector<int64_t> shape;
      switch (eo.index) {
        case EpIndex::kM: shape = masked ? std::vector<int64_t>{experts, m} : std::vector<int64_t>{rows}; break;
        case EpIndex::kN: shape = {n_out}; break;
        case EpIndex::kE: shape = {experts}; break;
        case EpIndex::kEN: shape = {experts, n_out}; break;
        case EpIndex::kMN:
          shape = masked ? std::vector<int64_t>{experts, m, n_out} : std::vector<int64_t>{rows, n_out};
          break;
      }
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      std::vector<float> v(static_cast<size_t>(count));
      bool as_bf16 = false;
      switch (eo.vector) {
        case EpVector::kScale:
          for (auto& x : v) x = 0.05f + 0.95f * std::fabs(uniform(s, 1.0f));
          break;
        case EpVector::kColScale:
        case EpVector::kExpertScale:
          for (auto& x : v) x = 0.5f + std::fabs(uniform(s, 1.5f));
          break;
        case EpVector::kResidual:
          for (auto& x : v) x = uniform(s, 2.0f);
          as_bf16 = true;
          break;
        default:  // bias, gate_bias, up_bias
          for (auto& x : v) x = uniform(s, 1.0f);
          as_bf16 = true;
          break;
      }
      if (as_bf16) {
        std::vector<uint16_t> b(v.size());
        for (size_t i = 0; i < v.size(); ++i) b[i] = numerics::bf16_from_float(v[i]);
        h.ep.push_back(tensor_of(b, shape, {kDLBfloat, 16, 1}));
      } else {
        h.ep.push_back(tensor_of(v, shape, kF32));
      }
    }
  }
  return h;
}

float host_epilogue_value(const HostOperands& h, size_t slot, int64_t row, int64_t col, int64_t expert,
                          int64_t n_out) {
  const HostTensor& t = h.ep[slot];
  int64_t i = 0;
  switch (h.ep_operands[slot].index) {
    case EpIndex::kM: i = row; break;
    case EpIndex::kN: i = col; break;
    case EpIndex::kE: i = expert; break;
    case EpIndex::kEN: i = expert * n_out + col; break;
    case EpIndex::kMN: i = row * n_out + col; break;
  }
  if (t.dtype.code == kDLBfloat) return numerics::bf16_to_float(reinterpret_cast<const uint16_t*>(t.bytes.data())[i]);
  return reinterpret_cast<const float*>(t.bytes.data())[i];
}

StatusOr<DeviceOperands> DeviceOperands::upload(const HostOperands& h) {
  DeviceOperands d;
  d.layout_ = h.layout;
  const HostTensor* src[7] = {&h.a, &h.b, &h.out, &h.a_scale, &h.b_scale, &h.b_global, &h.group_rows};
  for (int i = 0; i < 7; ++i) {
    if (!src[i]->present()) continue;
    d.present_[i] = true;
    d.shapes_[i] = src[i]->shape;
    const size_t bytes = std::max<size_t>(src[i]->bytes.size(), 16);
    KILN_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::alloc(bytes));
    if (!src[i]->bytes.empty()) KILN_RETURN_IF_ERROR(buf.upload(src[i]->bytes.data(), src[i]->bytes.size()));
    if (i == 2) KILN_RETURN_IF_ERROR(buf.fill_bytes(0xFF));  // poison: NaN in every float format
    DLTensor& t = d.t_[i];
    t.data = buf.data();
    t.device = {kDLCUDA, 0};
    t.ndim = static_cast<int>(d.shapes_[i].size());
    t.shape = d.shapes_[i].data();
    t.strides = nullptr;
    t.dtype = src[i]->dtype;
    if (i == 2) {
      d.out_ = std::move(buf);
    } else {
      d.bufs_[i] = std::move(buf);
    }
  }
  // The epilogue's vectors (row-major, so strides stay null).
  d.ep_shapes_.reserve(h.ep.size());
  d.ep_t_.resize(h.ep.size());
  for (size_t i = 0; i < h.ep.size(); ++i) {
    const size_t bytes = std::max<size_t>(h.ep[i].bytes.size(), 16);
    KILN_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::alloc(bytes));
    if (!h.ep[i].bytes.empty()) KILN_RETURN_IF_ERROR(buf.upload(h.ep[i].bytes.data(), h.ep[i].bytes.size()));
    d.ep_shapes_.push_back(h.ep[i].shape);
    DLTensor& t = d.ep_t_[i];
    t.data = buf.data();
    t.device = {kDLCUDA, 0};
    t.ndim = static_cast<int>(d.ep_shapes_[i].size());
    t.shape = d.ep_shapes_[i].data();
    t.strides = nullptr;
    t.dtype = h.ep[i].dtype;
    d.ep_bufs_.push_back(std::move(buf));
    d.ep_vectors_.push_back(h.ep_operands[i].vector);
  }
  return d;
}

Operands DeviceOperands::operands_with_out(DLTensor* out, bool with_epilogue) {
  Operands ops;
  for (size_t i = 0; with_epilogue && i < ep_t_.size(); ++i) {
    const DLTensor* t = &ep_t_[i];
    switch (ep_vectors_[i]) {
      case EpVector::kBias: ops.bias = t; break;
      case EpVector::kScale: ops.scale = t; break;
      case EpVector::kColScale: ops.colscale = t; break;
      case EpVector::kExpertScale: ops.expert_scale = t; break;
      case EpVector::kResidual: ops.residual = t; break;
      case EpVector::kGateBias: ops.gate_bias = t; break;
      case EpVector::kUpBias: ops.up_bias = t; break;
    }
  }
  ops.a = &t_[0];
  ops.b = &t_[1];
  ops.out = out;
  ops.a_scale = present_[3] ? &t_[3] : nullptr;
  ops.b_scale = present_[4] ? &t_[4] : nullptr;
  ops.b_global = present_[5] ? &t_[5] : nullptr;
  if (present_[6]) (layout_ == GroupLayout::kMasked ? ops.counts : ops.offsets) = &t_[6];
  return ops;
}

Operands DeviceOperands::operands() { return operands_with_out(&t_[2]); }

}  // namespace kiln

// verify/quantize_check.cpp — bitwise check of a quantize plan against the CPU references.
#include "verify/quantize_check.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/fp8_block.hpp"
#include "compiler/numerics/mx.hpp"
#include "compiler/numerics/nvfp4.hpp"
#include "compiler/plan/quantize_plan.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"

namespace kiln {
namespace {

using numerics::QuantizedTensor;

// Random X [m, k] as the input format's exact values (bf16 / f16 rounding applied), plus its bytes.
struct Input {
  std::vector<float> values;
  std::vector<uint8_t> bytes;
};

Input random_input(Format f, int64_t m, int64_t k, std::mt19937_64& rng) {
  Input in;
  in.values.resize(static_cast<size_t>(m * k));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-24, 8);
  std::uniform_int_distribution<int> pick(0, 15);
  // E4M3 and E2M1 rounding midpoints (scaled by the block's power of two below): 1.0625 sits between
  // 1 and 1.125; 5 between 4 and 6; 0.75 between 0.5 and 1.
  const float ties[] = {1.0625f, 5.0f, 0.75f, 2.5f, 0.25f, 13.0f, 1.75f, 3.5f};
  const int64_t blk = 16;
  for (int64_t r = 0; r < m; ++r) {
    const int row_e = binade(rng);
    for (int64_t c0 = 0; c0 < k; c0 += blk) {
      const int kind = pick(rng);
      const float scale = std::ldexp(1.0f, row_e + pick(rng) / 4);
      for (int64_t c = c0; c < std::min(k, c0 + blk); ++c) {
        float v;
        if (kind == 0) v = 0.0f;                                           // a zero block
        else if (kind == 1) v = ties[pick(rng) % 8] * scale * (pick(rng) & 1 ? -1.0f : 1.0f);
        else if (kind == 2) v = normal(rng) * std::ldexp(1.0f, -30);      // tiny values
        else v = normal(rng) * scale;
        if (f == Format::kBf16) v = numerics::bf16_to_float(numerics::bf16_from_float(v));
        if (f == Format::kF16) v = numerics::f16_to_float(numerics::f16_from_float(v));
        in.values[static_cast<size_t>(r * k + c)] = v;
      }
    }
  }
  const int eb = f == Format::kF32 ? 4 : 2;
  in.bytes.resize(in.values.size() * eb);
  for (size_t i = 0; i < in.values.size(); ++i) {
    if (f == Format::kF32) {
      std::memcpy(&in.bytes[i * 4], &in.values[i], 4);
    } else {
      const uint16_t h = f == Format::kBf16 ? numerics::bf16_from_float(in.values[i]) : numerics::f16_from_float(in.values[i]);
      std::memcpy(&in.bytes[i * 2], &h, 2);
    }
  }
  return in;
}

std::vector<float> transposed(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = x[static_cast<size_t>(r * cols + c)];
  return t;
}

// The CPU reference for the spec: codes and scales in the layout the kernel writes.
StatusOr<QuantizedTensor> reference(const KernelSpec& spec, const std::vector<float>& x, int64_t m, int64_t k) {
  const QuantizeShape qs = quantize_shape(spec);
  const bool t = spec.transpose;
  const std::vector<float> xt = t ? transposed(x, m, k) : std::vector<float>();
  const std::vector<float>& src = t ? xt : x;
  const int64_t rows = t ? k : m, cols = t ? m : k;
  switch (spec.out.format) {
    case Format::kMxfp8:
    case Format::kMxfp4: return numerics::mx_quantize(src, rows, cols, spec.out.format, spec.mx_rounding);
    case Format::kNvfp4: {
      numerics::Nvfp4Options o;
      o.e4m3_bound = spec.e4m3_bound;
      o.four_over_six = spec.four_over_six;
      return numerics::nvfp4_quantize(src, rows, cols, o);
    }
    default: break;
  }
  numerics::Fp8BlockOptions o;
  o.scale_type = spec.out.scale_type == ScaleType::kUe8m0 ? ScaleType::kUe8m0 : ScaleType::kF32;
  switch (qs.mode) {
    case QuantizeMode::kTensor: o.blocking = numerics::Fp8Blocking::kTensor; break;
    case QuantizeMode::kRow:
    case QuantizeMode::kColumns: o.blocking = numerics::Fp8Blocking::kRow; break;  // kColumns: rows of Xᵀ
    case QuantizeMode::kBlock2d: o.blocking = numerics::Fp8Blocking::kBlock128x128; break;
    default: o.blocking = numerics::Fp8Blocking::kBlock1x128; break;
  }
  return numerics::fp8_block_quantize(src, rows, cols, o);
}

// Grouped transposed (quantize[experts=E,...] transpose=true): each expert's rows [start, start + r)
// quantized on their own as a zero-padded run of whole blocks at columns P_e of the [K, W] copy
// (templates/common/quantize_params.cuh); columns past the last expert's blocks stay poisoned (0xFF bytes).
StatusOr<QuantizedTensor> grouped_reference(const KernelSpec& spec, const std::vector<float>& x, int64_t k,
                                            const std::vector<int64_t>& starts, const std::vector<int64_t>& rows,
                                            int64_t w) {
  KernelSpec dense = spec;
  dense.experts = 0;
  dense.layout = GroupLayout::kDense;
  const int64_t block = quantize_shape(spec).block;
  QuantizedTensor out;
  out.rows = k;
  out.cols = w;
  out.data.assign(static_cast<size_t>(k * w), 0xFF);
  int64_t at = 0;
  for (size_t e = 0; e < rows.size(); ++e) {
    const int64_t padded = (rows[e] + block - 1) / block * block;
    if (padded == 0) continue;
    std::vector<float> xe(static_cast<size_t>(padded * k), 0.0f);
    std::copy(x.begin() + starts[e] * k, x.begin() + (starts[e] + rows[e]) * k, xe.begin());
    KILN_ASSIGN_OR_RETURN(QuantizedTensor q, reference(dense, xe, padded, k));
    if (out.scale_bytes.empty() && out.scales_f32.empty()) {  // the layout of the first expert's blocks
      out.format = q.format;
      out.block_rows = q.block_rows;
      out.block_cols = q.block_cols;
      out.scale_type = q.scale_type;
      const size_t n = static_cast<size_t>(out.scale_rows() * out.scale_cols());
      if (q.scale_type == ScaleType::kF32) out.scales_f32.assign(n, std::bit_cast<float>(0xFFFFFFFFu));
      else out.scale_bytes.assign(n, 0xFF);
    }
    const int64_t sb = padded / block, scols = w / block;
    for (int64_t r = 0; r < k; ++r) {
      std::copy_n(q.data.begin() + r * padded, padded, out.data.begin() + r * w + at);
      if (!q.scales_f32.empty())
        std::copy_n(q.scales_f32.begin() + r * sb, sb, out.scales_f32.begin() + r * scols + at / block);
      else
        std::copy_n(q.scale_bytes.begin() + r * sb, sb, out.scale_bytes.begin() + r * scols + at / block);
    }
    at += padded;
  }
  if (out.scale_bytes.empty() && out.scales_f32.empty()) {  // no rows at all: everything stays poisoned
    out.format = spec.out.format;
    out.block_rows = 1;
    out.block_cols = block;
    out.scale_type = spec.out.scale_type == ScaleType::kUe8m0 ? ScaleType::kUe8m0 : ScaleType::kF32;
    const size_t n = static_cast<size_t>(out.scale_rows() * out.scale_cols());
    if (out.scale_type == ScaleType::kF32) out.scales_f32.assign(n, std::bit_cast<float>(0xFFFFFFFFu));
    else out.scale_bytes.assign(n, 0xFF);
  }
  return out;
}

DLTensor tensor(void* data, DLDataType dtype, int ndim, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCUDA, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

bool same_f32_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;  // NaN payloads are not part of the contract
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

}  // namespace

std::string QuantizeCheckReport::to_json() const {
  nlohmann::json j = {{"seed", seed},         {"m", m},
                      {"k", k},               {"checked", checked},
                      {"codes", codes},       {"code_mismatches", code_mismatches},
                      {"scales", scales},     {"scale_mismatches", scale_mismatches},
                      {"global_mismatch", global_mismatch}, {"first_mismatch", first_mismatch},
                      {"passed", passed},     {"median_ms", median_ms},
                      {"gbps", gbps}};
  return j.dump();
}

StatusOr<QuantizeCheckReport> run_quantize_check(Runtime& rt, const Plan& plan, const QuantizeCheckOptions& o) {
  KILN_RETURN_IF_ERROR(rt.device_status());
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  const KernelSpec& spec = plan.spec();
  if (spec.op != Op::kQuantize)
    return InvalidArgument("run_quantize_check: the plan's spec is " + std::string(op_name(spec.op)) +
                           ", not quantize (use run_check)");
  const int64_t m = o.m, k = plan.sizes().k;
  if (m < 1) return InvalidArgument("run_quantize_check: m = " + std::to_string(m) + "; expected m >= 1");
  KILN_RETURN_IF_ERROR(quantize_can_implement(spec, {m, 0, k}));
  QuantizeCheckReport r;
  r.m = m;
  r.k = k;
  r.seed = o.seed ? o.seed
                  : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
  std::mt19937_64 rng(r.seed);
  // Grouped: offsets over m rows, or masked [E, m, K] with counts up to m; about a quarter of the experts
  // empty, one masked expert full.
  const bool grouped = spec.experts > 0;
  const bool masked = spec.layout == GroupLayout::kMasked;
  const int64_t rows_in = grouped && masked ? m * spec.experts : m;
  std::vector<int64_t> starts, counts;
  std::vector<int32_t> group_vec;
  if (grouped) {
    uint64_t state = rng() | 1;
    group_vec = random_groups(masked, spec.experts, m, state);
    int64_t end = 0;
    for (size_t e = 0; e < group_vec.size(); ++e) {
      starts.push_back(masked ? static_cast<int64_t>(e) * m : end);
      counts.push_back(group_vec[e]);
      end += group_vec[e];
      if (!masked) group_vec[e] = static_cast<int32_t>(end);  // offsets: cumulative ends
    }
  }
  const Input in = random_input(spec.a.format, rows_in, k, rng);
  const int64_t w = grouped ? grouped_transposed_cols(spec, rows_in) : 0;
  KILN_ASSIGN_OR_RETURN(QuantizedTensor ref, grouped ? grouped_reference(spec, in.values, k, starts, counts, w)
                                                     : reference(spec, in.values, m, k));

  ScopedContext ctx;
  KILN_RETURN_IF_ERROR(ctx.enter(d, 0));
  const QuantizeShape qs = quantize_shape(spec);
  const bool t = spec.transpose;
  const bool fp4 = format_bits(spec.out.format) == 4;
  // Per-column scales (e4m3:m transpose=true): the copy padded to whole 16-byte rows, as a GEMM over it reads
  // it; the padding columns are zero codes.
  const bool columns = qs.mode == QuantizeMode::kColumns;
  const int64_t out_rows = t ? k : m, out_cols = grouped ? w : columns ? (m + 15) / 16 * 16 : t ? m : k;
  if (columns && out_cols != m) {
    std::vector<uint8_t> padded(static_cast<size_t>(k * out_cols), 0);
    for (int64_t r = 0; r < k; ++r) std::copy_n(ref.data.begin() + r * m, m, padded.begin() + r * out_cols);
    ref.data = std::move(padded);
  }
  const size_t out_bytes = static_cast<size_t>(out_rows * (fp4 ? out_cols / 2 : out_cols));
  const bool f32_scales = spec.out.scale_type == ScaleType::kF32;
  const int64_t scale_count = static_cast<int64_t>(f32_scales ? ref.scales_f32.size() : ref.scale_bytes.size());
  const size_t scale_bytes = static_cast<size_t>(scale_count * (f32_scales ? 4 : 1));

  KILN_ASSIGN_OR_RETURN(DeviceBuffer din, DeviceBuffer::alloc(std::max<size_t>(in.bytes.size(), 16)));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dout, DeviceBuffer::alloc(std::max<size_t>(out_bytes, 16)));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dscale, DeviceBuffer::alloc(std::max<size_t>(scale_bytes, 16)));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dglobal, DeviceBuffer::alloc(16));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dgroups, DeviceBuffer::alloc(std::max<size_t>(group_vec.size() * 4, 16)));
  KILN_RETURN_IF_ERROR(din.upload(in.bytes.data(), in.bytes.size()));
  if (grouped) KILN_RETURN_IF_ERROR(dgroups.upload(group_vec.data(), group_vec.size() * 4));
  for (DeviceBuffer* b : {&dout, &dscale, &dglobal}) KILN_RETURN_IF_ERROR(b->fill_bytes(0xFF));

  const DLDataType in_dtype = spec.a.format == Format::kF32   ? DLDataType{kDLFloat, 32, 1}
                              : spec.a.format == Format::kF16 ? DLDataType{kDLFloat, 16, 1}
                                                              : DLDataType{kDLBfloat, 16, 1};
  int64_t a_shape[3] = {m, k, 0};
  if (grouped && masked) {
    a_shape[0] = spec.experts;
    a_shape[1] = m;
    a_shape[2] = k;
  }
  int64_t out_shape[2] = {out_rows, fp4 ? out_cols / 2 : out_cols};
  // Scale tensors: f32 [1] (tensor), f32 [M] (per token) or the 2-D [rows, cols] of the reference.
  int64_t scale_shape[2] = {ref.scale_rows(), ref.scale_cols()};
  int scale_ndim = 2;
  if (qs.mode == QuantizeMode::kTensor) {
    scale_shape[0] = 1;
    scale_ndim = 1;
  } else if (qs.mode == QuantizeMode::kRow || qs.mode == QuantizeMode::kColumns) {
    scale_shape[0] = qs.mode == QuantizeMode::kRow ? m : k;
    scale_ndim = 1;
  }
  int64_t global_shape[1] = {1};
  DLTensor ta = tensor(din.data(), in_dtype, grouped && masked ? 3 : 2, a_shape);
  int64_t groups_shape[1] = {spec.experts};
  DLTensor tgroups = tensor(dgroups.data(), {kDLInt, 32, 1}, 1, groups_shape);
  DLTensor tout = tensor(dout.data(), {kDLUInt, 8, 1}, 2, out_shape);
  DLTensor tscale = tensor(dscale.data(), f32_scales ? DLDataType{kDLFloat, 32, 1} : DLDataType{kDLUInt, 8, 1},
                           scale_ndim, scale_shape);
  DLTensor tglobal = tensor(dglobal.data(), {kDLFloat, 32, 1}, 1, global_shape);
  Operands ops;
  ops.a = &ta;
  ops.out = &tout;
  ops.out_scale = &tscale;
  if (spec.out.format == Format::kNvfp4) ops.out_global = &tglobal;
  if (grouped) (masked ? ops.counts : ops.offsets) = &tgroups;

  KILN_RETURN_IF_ERROR(plan.run(ops, nullptr, 0, nullptr));
  KILN_RETURN_IF_ERROR(d->check(d->cuCtxSynchronize(), "quantize kernel execution (cuCtxSynchronize)"));

  if (o.check) {
    std::vector<uint8_t> hout(out_bytes), hscale(scale_bytes);
    float hglobal = 0;
    KILN_RETURN_IF_ERROR(dout.download(hout.data(), hout.size()));
    KILN_RETURN_IF_ERROR(dscale.download(hscale.data(), hscale.size()));
    KILN_RETURN_IF_ERROR(dglobal.download(&hglobal, 4));
    auto note = [&](const std::string& what) {
      if (r.first_mismatch.empty()) r.first_mismatch = what;
    };
    r.codes = static_cast<int64_t>(out_bytes);
    for (size_t i = 0; i < out_bytes; ++i) {
      if (hout[i] != ref.data[i]) {
        if (r.code_mismatches++ == 0) {
          const int64_t per_row = fp4 ? out_cols / 2 : out_cols;
          note("out byte [" + std::to_string(i / per_row) + ", " + std::to_string(i % per_row) + "]: kernel " +
               std::to_string(hout[i]) + ", reference " + std::to_string(ref.data[i]));
        }
      }
    }
    r.scales = scale_count;
    for (int64_t i = 0; i < scale_count; ++i) {
      bool same;
      std::string got, want;
      if (f32_scales) {
        float g;
        std::memcpy(&g, &hscale[static_cast<size_t>(i) * 4], 4);
        const float w = ref.scales_f32[static_cast<size_t>(i)];
        // The tensor scale: the reference's decode scale, as the finalize phase writes it.
        same = same_f32_bits(g, w);
        got = std::to_string(g);
        want = std::to_string(w);
      } else {
        same = hscale[static_cast<size_t>(i)] == ref.scale_bytes[static_cast<size_t>(i)];
        got = std::to_string(hscale[static_cast<size_t>(i)]);
        want = std::to_string(ref.scale_bytes[static_cast<size_t>(i)]);
      }
      if (!same && r.scale_mismatches++ == 0)
        note("out_scale element " + std::to_string(i) + ": kernel " + got + " reference " + want);
    }
    if (spec.out.format == Format::kNvfp4 && !same_f32_bits(hglobal, ref.global_decode_scale)) {
      r.global_mismatch = true;
      note("out_global: kernel " + std::to_string(hglobal) + " reference " + std::to_string(ref.global_decode_scale));
    }
    r.checked = true;
    r.passed = r.code_mismatches == 0 && r.scale_mismatches == 0 && !r.global_mismatch;
  }

  if (o.time) {
    KILN_ASSIGN_OR_RETURN(r.median_ms,
                          median_event_ms([&] { return plan.run(ops, nullptr, 0, nullptr); }, o.warmup, o.repeats));
    r.gbps = static_cast<double>(in.bytes.size() + out_bytes + scale_bytes) / (r.median_ms * 1e-3) / 1e9;
  }
  return r;
}

}  // namespace kiln

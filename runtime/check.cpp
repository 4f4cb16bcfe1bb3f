#include "runtime/check.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/numerics/fp8.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"
#include "runtime/runtime_impl.hpp"
#include "templates/common/gemm_params.cuh"

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

// Random elements of format f, stored as the kernel reads them.
std::vector<uint8_t> random_matrix(Format f, int64_t rows, int64_t cols, uint64_t& s) {
  int eb = format_bits(f) / 8;
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols * eb));
  int64_t n = rows * cols;
  switch (f) {
    case Format::kBf16: {
      auto* p = reinterpret_cast<uint16_t*>(out.data());
      for (int64_t i = 0; i < n; ++i) p[i] = numerics::bf16_from_float(uniform(s, 2.f));
      break;
    }
    case Format::kF16: {
      auto* p = reinterpret_cast<uint16_t*>(out.data());
      for (int64_t i = 0; i < n; ++i) p[i] = numerics::f16_from_float(uniform(s, 2.f));
      break;
    }
    case Format::kF32: {
      auto* p = reinterpret_cast<float*>(out.data());
      for (int64_t i = 0; i < n; ++i) p[i] = uniform(s, 2.f);
      break;
    }
    case Format::kE4m3:
      for (int64_t i = 0; i < n; ++i) out[i] = numerics::e4m3_from_float(uniform(s, 8.f), true);
      break;
    case Format::kE5m2:
      for (int64_t i = 0; i < n; ++i) out[i] = numerics::e5m2_from_float(uniform(s, 8.f), true);
      break;
    default:
      break;
  }
  return out;
}

double decode_out(Format f, const uint8_t* p, int64_t i) {
  switch (f) {
    case Format::kBf16: return numerics::bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case Format::kF16: return numerics::f16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case Format::kF32: return reinterpret_cast<const float*>(p)[i];
    default: return NAN;
  }
}

DLTensor matrix(void* data, Format f, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCUDA, 0};
  t.ndim = 2;
  t.shape = shape;
  t.strides = nullptr;
  switch (f) {
    case Format::kBf16: t.dtype = {kDLBfloat, 16, 1}; break;
    case Format::kF16: t.dtype = {kDLFloat, 16, 1}; break;
    case Format::kF32: t.dtype = {kDLFloat, 32, 1}; break;
    default: t.dtype = {kDLUInt, 8, 1}; break;
  }
  return t;
}

}  // namespace

double check_tolerance(const KernelSpec& spec, int64_t /*k*/) {
  // Output rounding dominates: bf16 keeps 8 significant bits (relative error <= 2^-9 per element),
  // f16 11 bits; f32 outputs differ from the reference only by accumulation order.
  switch (spec.out.format) {
    case Format::kBf16: return 8e-3;
    case Format::kF16: return 2e-3;
    default: return 1e-5;
  }
}

std::string CheckReport::to_json() const {
  nlohmann::json j = {{"seed", seed},       {"m", m},
                      {"n", n},             {"k", k},
                      {"checked", checked}, {"max_abs_err", max_abs_err},
                      {"rel_fro_err", rel_fro_err}, {"tolerance", tolerance},
                      {"unwritten", unwritten},     {"nonfinite", nonfinite},
                      {"passed", passed},   {"median_ms", median_ms},
                      {"tflops", tflops},   {"gbps", gbps},
                      {"config", config}};
  return j.dump();
}

StatusOr<CheckReport> run_check(Runtime& rt, const Plan& plan, const CheckOptions& o) {
  KILN_RETURN_IF_ERROR(rt.device_status());
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  const KernelSpec& spec = plan.spec();
  const int64_t m = o.m, n = plan.sizes().n, k = plan.sizes().k;
  if (m < 1) return InvalidArgument("run_check: m = " + std::to_string(m) + "; expected m >= 1");
  CheckReport r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.seed = o.seed ? o.seed
                  : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
  r.config = plan.config_for(m).to_string();
  uint64_t s = r.seed;

  ScopedContext ctx;
  KILN_RETURN_IF_ERROR(ctx.enter(d, 0));

  auto ha = random_matrix(spec.a.format, m, k, s);
  auto hb = random_matrix(spec.b.format, n, k, s);
  float sa = spec.a.scale == ScaleGranularity::kNone ? 1.f : 0.5f + std::fabs(uniform(s, 1.5f));
  float sb = spec.b.scale == ScaleGranularity::kNone ? 1.f : 0.5f + std::fabs(uniform(s, 1.5f));
  int ob = format_bits(spec.out.format) / 8;

  KILN_ASSIGN_OR_RETURN(DeviceBuffer da, DeviceBuffer::alloc(ha.size()));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer db, DeviceBuffer::alloc(hb.size()));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dout, DeviceBuffer::alloc(static_cast<size_t>(m * n * ob)));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dref, DeviceBuffer::alloc(static_cast<size_t>(m * n * 4)));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dsa, DeviceBuffer::alloc(4));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dsb, DeviceBuffer::alloc(4));
  KILN_RETURN_IF_ERROR(da.upload(ha.data(), ha.size()));
  KILN_RETURN_IF_ERROR(db.upload(hb.data(), hb.size()));
  KILN_RETURN_IF_ERROR(dsa.upload(&sa, 4));
  KILN_RETURN_IF_ERROR(dsb.upload(&sb, 4));
  KILN_RETURN_IF_ERROR(dout.fill_bytes(0xFF));  // poison: NaN in every float format
  KILN_RETURN_IF_ERROR(dref.fill_bytes(0xFF));

  int64_t shape_a[2] = {m, k}, shape_b[2] = {n, k}, shape_o[2] = {m, n}, shape_s[1] = {1};
  DLTensor ta = matrix(da.data(), spec.a.format, shape_a);
  DLTensor tb = matrix(db.data(), spec.b.format, shape_b);
  DLTensor to = matrix(dout.data(), spec.out.format, shape_o);
  DLTensor tsa{}, tsb{};
  tsa.data = dsa.data();
  tsa.device = {kDLCUDA, 0};
  tsa.ndim = 1;
  tsa.shape = shape_s;
  tsa.dtype = {kDLFloat, 32, 1};
  tsb = tsa;
  tsb.data = dsb.data();
  Operands ops;
  ops.a = &ta;
  ops.b = &tb;
  ops.out = &to;
  if (spec.a.scale != ScaleGranularity::kNone) ops.a_scale = &tsa;
  if (spec.b.scale != ScaleGranularity::kNone) ops.b_scale = &tsb;

  KILN_RETURN_IF_ERROR(plan.run(ops, nullptr, 0, nullptr));
  KILN_RETURN_IF_ERROR(d->check(d->cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)"));

  if (o.check) {
    // Reference: kiln's naive GPU kernel, same spec but f32 output (no output rounding).
    KernelSpec ref_spec = spec;
    ref_spec.out = OperandSpec{Format::kF32, ScaleGranularity::kNone, ScaleType::kNone};
    KILN_ASSIGN_OR_RETURN(LoadedKernel * ref,
                          rt.impl()->load(ref_spec, KernelFamily::kReferenceGemm, TileConfig{}, plan.arch()));
    kiln_dev::GemmParams gp{};
    gp.a = da.data();
    gp.b = db.data();
    gp.out = dref.data();
    gp.a_scale = spec.a.scale == ScaleGranularity::kNone ? nullptr : static_cast<const float*>(dsa.data());
    gp.b_scale = spec.b.scale == ScaleGranularity::kNone ? nullptr : static_cast<const float*>(dsb.data());
    gp.lda = k;
    gp.ldb = k;
    gp.ldc = n;
    gp.m = static_cast<int>(m);
    gp.n = static_cast<int>(n);
    gp.k = static_cast<int>(k);
    LaunchShape ls = launch_shape(ref_spec, KernelFamily::kReferenceGemm, TileConfig{}, {m, n, k});
    void* args[] = {&gp};
    KILN_RETURN_IF_ERROR(rt.impl()->prepare_on_device(ref, 0));
    KILN_RETURN_IF_ERROR(d->check(d->cuLaunchKernel(reinterpret_cast<CUfunction>(ref->kernel), ls.grid_x, ls.grid_y,
                                                    ls.grid_z, ls.block_x, 1, 1, ls.dynamic_smem, nullptr, args,
                                                    nullptr),
                                  "cuLaunchKernel(reference)"));
    KILN_RETURN_IF_ERROR(d->check(d->cuCtxSynchronize(), "reference kernel execution"));

    std::vector<uint8_t> hout(static_cast<size_t>(m * n * ob));
    std::vector<float> href(static_cast<size_t>(m * n));
    KILN_RETURN_IF_ERROR(dout.download(hout.data(), hout.size()));
    KILN_RETURN_IF_ERROR(dref.download(href.data(), href.size() * 4));
    double num = 0, den = 0;
    for (int64_t i = 0; i < m * n; ++i) {
      bool poisoned = ob == 2 ? reinterpret_cast<uint16_t*>(hout.data())[i] == 0xFFFF
                              : reinterpret_cast<uint32_t*>(hout.data())[i] == 0xFFFFFFFFu;
      double ref_v = href[i];
      double v = decode_out(spec.out.format, hout.data(), i);
      if (poisoned) {
        ++r.unwritten;
        continue;
      }
      if (!std::isfinite(v) && std::isfinite(ref_v)) {
        ++r.nonfinite;
        continue;
      }
      double e = std::fabs(v - ref_v);
      r.max_abs_err = std::max(r.max_abs_err, e);
      num += e * e;
      den += ref_v * ref_v;
    }
    r.rel_fro_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    r.tolerance = check_tolerance(spec, k);
    r.checked = true;
    r.passed = r.unwritten == 0 && r.nonfinite == 0 && r.rel_fro_err <= r.tolerance;
  }

  if (o.time) {
    CUevent e0, e1;
    KILN_RETURN_IF_ERROR(d->check(d->cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate"));
    KILN_RETURN_IF_ERROR(d->check(d->cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate"));
    for (int i = 0; i < o.warmup; ++i) KILN_RETURN_IF_ERROR(plan.run(ops, nullptr, 0, nullptr));
    std::vector<double> times;
    for (int i = 0; i < std::max(1, o.repeats); ++i) {
      KILN_RETURN_IF_ERROR(d->check(d->cuEventRecord(e0, nullptr), "cuEventRecord"));
      KILN_RETURN_IF_ERROR(plan.run(ops, nullptr, 0, nullptr));
      KILN_RETURN_IF_ERROR(d->check(d->cuEventRecord(e1, nullptr), "cuEventRecord"));
      KILN_RETURN_IF_ERROR(d->check(d->cuEventSynchronize(e1), "cuEventSynchronize"));
      float ms = 0;
      KILN_RETURN_IF_ERROR(d->check(d->cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime"));
      times.push_back(ms);
    }
    d->cuEventDestroy(e0);
    d->cuEventDestroy(e1);
    std::sort(times.begin(), times.end());
    r.median_ms = times[times.size() / 2];
    r.tflops = 2.0 * m * n * k / (r.median_ms * 1e-3) / 1e12;
    double bytes = static_cast<double>(ha.size() + hb.size()) + static_cast<double>(m * n * ob);
    r.gbps = bytes / (r.median_ms * 1e-3) / 1e9;
  }
  return r;
}

}  // namespace kiln

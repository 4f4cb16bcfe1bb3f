#include "verify/check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <vector>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/plan/gemm_view.hpp"
#include "compiler/numerics/fp8.hpp"
#include "compiler/plan/sm90_plan.hpp"  // kMxPrepassMinM
#include "verify/check_inputs.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"
#include "runtime/operands.hpp"
#include "runtime/runtime_access.hpp"
#include "templates/common/gemm_params.cuh"

namespace kiln {

namespace {

double decode_out(Format f, const uint8_t* p, int64_t i) {
  switch (f) {
    case Format::kBf16: return numerics::bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case Format::kF16: return numerics::f16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case Format::kF32: return reinterpret_cast<const float*>(p)[i];
    default: return NAN;
  }
}

// x as the output format stores it (round to nearest even; past the range: +-Inf).
double stored_as(Format f, float x) {
  switch (f) {
    case Format::kBf16: return numerics::bf16_to_float(numerics::bf16_from_float(x));
    case Format::kF16: return numerics::f16_to_float(numerics::f16_from_float(x));
    default: return x;
  }
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
                      {"overwritten", overwritten},
                      {"passed", passed},   {"median_ms", median_ms},
                      {"tflops", tflops},   {"gbps", gbps},
                      {"config", config}};
  if (!timing.empty()) {
    j["timing"] = timing;
    if (copies > 0) j["copies"] = copies;
  }
  return j.dump();
}

namespace {

// The L2 bytes of the current context's device (0 when there is none to ask).
size_t current_l2_bytes(const Driver* d) {
  CUcontext cur = nullptr;
  CUdevice dev = 0;
  int l2 = 0;
  if (d->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != nullptr && d->cuCtxGetDevice(&dev) == CUDA_SUCCESS)
    d->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
  return static_cast<size_t>(std::max(l2, 0));
}

}  // namespace

StatusOr<double> median_event_ms(const std::function<Status()>& launch, int warmup, int repeats, bool flush_l2) {
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  DeviceBuffer flush;
  if (flush_l2) {
    const size_t bytes = std::max<size_t>(2 * current_l2_bytes(d), size_t{64} << 20);
    KILN_ASSIGN_OR_RETURN(flush, DeviceBuffer::alloc(bytes));
  }
  CUevent e0 = nullptr, e1 = nullptr;
  KILN_RETURN_IF_ERROR(d->check(d->cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate"));
  Status st = d->check(d->cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> times;
  for (int i = 0; st.ok() && i < warmup; ++i) st = launch();
  for (int i = 0; st.ok() && i < std::max(1, repeats); ++i) {
    if (flush.size() > 0)  // the legacy stream, like the launches: ordered before e0
      st = d->check(d->cuMemsetD32(reinterpret_cast<CUdeviceptr>(flush.data()), static_cast<unsigned>(i),
                                   flush.size() / 4),
                    "cuMemsetD32 (L2 flush)");
    if (st.ok()) st = d->check(d->cuEventRecord(e0, nullptr), "cuEventRecord");
    if (st.ok()) st = launch();
    if (st.ok()) st = d->check(d->cuEventRecord(e1, nullptr), "cuEventRecord");
    if (st.ok()) st = d->check(d->cuEventSynchronize(e1), "cuEventSynchronize");
    float ms = 0;
    if (st.ok()) st = d->check(d->cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
    times.push_back(ms);
  }
  d->cuEventDestroy(e0);
  if (e1 != nullptr) d->cuEventDestroy(e1);
  if (!st.ok()) return st;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

StatusOr<double> median_graph_ms(const std::vector<std::function<Status(CUstream_st*)>>& calls, int warmup,
                                 int repeats) {
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  if (calls.empty()) return InvalidArgument("median_graph_ms: no calls to time");
  // The inputs were uploaded on the legacy stream (a pageable copy may return before its DMA ends), and the
  // timing stream below does not wait for it.
  KILN_RETURN_IF_ERROR(d->check(d->cuCtxSynchronize(), "cuCtxSynchronize (before timing)"));
  CUstream s = nullptr;
  KILN_RETURN_IF_ERROR(d->check(d->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUevent e0 = nullptr, e1 = nullptr;
  std::vector<double> times;
  // Every step below runs while st is OK; the handles are released whatever happened.
  Status st = Status::Ok();
  for (const auto& call : calls)  // loads kernels and grows workspaces outside the capture
    if (st.ok()) st = call(s);
  if (st.ok()) st = d->check(d->cuStreamSynchronize(s), "cuStreamSynchronize (before capture)");
  if (st.ok()) st = d->check(d->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  if (st.ok()) {
    for (const auto& call : calls)
      if (st.ok()) st = call(s);
    // End the capture whatever the calls said, so the stream leaves capture mode.
    const Status end = d->check(d->cuStreamEndCapture(s, &graph), "cuStreamEndCapture");
    if (st.ok()) st = end;
  }
  if (st.ok()) st = d->check(d->cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  if (st.ok()) st = d->check(d->cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
  if (st.ok()) st = d->check(d->cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
  for (int i = 0; st.ok() && i < std::max(1, warmup); ++i) st = d->check(d->cuGraphLaunch(exec, s), "cuGraphLaunch");
  for (int i = 0; st.ok() && i < std::max(1, repeats); ++i) {
    st = d->check(d->cuEventRecord(e0, s), "cuEventRecord");
    if (st.ok()) st = d->check(d->cuGraphLaunch(exec, s), "cuGraphLaunch");
    if (st.ok()) st = d->check(d->cuEventRecord(e1, s), "cuEventRecord");
    if (st.ok()) st = d->check(d->cuEventSynchronize(e1), "cuEventSynchronize");
    float ms = 0;
    if (st.ok()) st = d->check(d->cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
    if (st.ok()) times.push_back(static_cast<double>(ms) / static_cast<double>(calls.size()));
  }
  if (st.ok()) st = d->check(d->cuStreamSynchronize(s), "cuStreamSynchronize");
  if (e1 != nullptr) d->cuEventDestroy(e1);
  if (e0 != nullptr) d->cuEventDestroy(e0);
  if (exec != nullptr) d->cuGraphExecDestroy(exec);
  if (graph != nullptr) d->cuGraphDestroy(graph);
  d->cuStreamDestroy(s);
  if (!st.ok()) return st;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

namespace {

// How many copies of the inputs a graph-timed run rotates over: enough that one replay's working set is
// over 3x the L2 (so no launch finds its operands cached by the one before), at most max_copies, and only
// as many as leave half of the free device memory free.
StatusOr<int> graph_copies(const Driver* d, size_t bytes_per_call, int max_copies) {
  const size_t l2 = current_l2_bytes(d);
  size_t free_b = 0, total_b = 0;
  KILN_RETURN_IF_ERROR(d->check(d->cuMemGetInfo(&free_b, &total_b), "cuMemGetInfo"));
  const size_t per = std::max<size_t>(bytes_per_call, 1);
  const size_t want = (3 * std::max<size_t>(l2, 1) + per - 1) / per;
  const size_t fit = free_b / 2 / per;
  return static_cast<int>(std::clamp<size_t>(std::min(want, fit), 1, static_cast<size_t>(std::max(1, max_copies))));
}

}  // namespace

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
  const int experts = spec.op == Op::kGroupedGemm ? spec.experts : 1;
  // The bucket Plan::run picks (rows_per_expert; a masked check's m is already rows per expert).
  const int64_t bucket_m = spec.layout == GroupLayout::kMasked ? m : rows_per_expert(spec, m);
  r.config = plan.config_for(bucket_m).to_string();
  uint64_t s = r.seed;

  ScopedContext ctx;
  KILN_RETURN_IF_ERROR(ctx.enter(d, 0));
  // The MXFP8 pre-pass's workspace (no zero fill needed).
  DeviceBuffer prepass_ws;
  size_t ws_bytes = 0;
  if (o.mx_prepass) {
    // The rows of X as Plan::run sees them (masked: E x max_m).
    const int64_t x_rows = spec.layout == GroupLayout::kMasked ? m * experts : m;
    ws_bytes = plan.mx_prepass_workspace_bytes(x_rows);
    if (ws_bytes == 0)
      return InvalidArgument("run_check: mx_prepass asked for, but the plan (" + print_spec(spec) +
                             ") has no MXFP8 pre-pass for " + std::to_string(x_rows) +
                             " rows of X (MXFP8 on sm_90a from " + std::to_string(kMxPrepassMinM) +
                             " rows per expert)");
    KILN_ASSIGN_OR_RETURN(prepass_ws, DeviceBuffer::alloc(ws_bytes));
    r.config = "mx_prepass+" + plan.mx_prepass_config_for(x_rows).to_string();
  }
  void* ws = o.mx_prepass ? prepass_ws.data() : nullptr;

  std::shared_ptr<const HostOperands> inputs = o.inputs;
  if (!inputs) {
    KILN_ASSIGN_OR_RETURN(HostOperands fresh, random_operands(spec, m, n, k, o.group_rows, s));
    inputs = std::make_shared<const HostOperands>(std::move(fresh));
  }
  const HostOperands& h = *inputs;
  KILN_ASSIGN_OR_RETURN(DeviceOperands dev, DeviceOperands::upload(h));
  const int64_t rows = h.rows;
  const int ob = format_bits(spec.out.format) / 8;
  Operands ops = dev.operands();
  // accumulate=true: the output starts from random values (normal, sd 4, stored in the output format)
  // instead of the poison, and the expected result is those values plus the product.
  std::vector<uint8_t> init;
  if (spec.accumulate) {
    init.resize(h.out.bytes.size());
    std::mt19937_64 g(r.seed ^ 0x9E3779B97F4A7C15ull);
    std::normal_distribution<float> nd(0.0f, 4.0f);
    for (size_t i = 0; i < init.size() / static_cast<size_t>(ob); ++i) {
      const float v = nd(g);
      if (ob == 4) {
        std::memcpy(init.data() + 4 * i, &v, 4);
      } else {
        const uint16_t b = spec.out.format == Format::kBf16 ? numerics::bf16_from_float(v) : numerics::f16_from_float(v);
        std::memcpy(init.data() + 2 * i, &b, 2);
      }
    }
    KILN_RETURN_IF_ERROR(dev.out().upload(init.data(), init.size()));
  }

  KILN_RETURN_IF_ERROR(plan.run(ops, ws, ws_bytes, nullptr));
  KILN_RETURN_IF_ERROR(d->check(d->cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)"));

  if (o.check) {
    // Reference: kiln's naive GPU kernel, same spec and operands but an f32 output (no rounding).
    // With an epilogue the reference computes the plain GEMM (all N columns); the epilogue is applied
    // to its f32 result below by the host evaluator (compiler/epilogue evaluate_epilogue), which is
    // independent of the device functor and of the kernels' gate|up pairing.
    KernelSpec ref_spec = spec;
    ref_spec.out = OperandSpec{Format::kF32, ScaleGranularity::kNone, ScaleType::kNone};
    // A quantized dgrad's reference is the forward GEMM of dY and Wᵀ, transposed on the host here
    // (compiler/plan/gemm_view.hpp): (M, K, N) for the forward's (M, N, K).
    // An MXFP8 dgrad or wgrad (backward_runs_forward_gemm) is the forward GEMM of its operands as given,
    // in the view's (m, n, k): dgrad (M, K, N), wgrad (N, K, M). The reference writes the product alone
    // (accumulate's starting values are added below).
    const bool transposed_w = dgrad_reads_transposed_w(spec);
    const bool forward_gemm = backward_runs_forward_gemm(spec);
    ref_spec.accumulate = false;
    std::optional<DeviceOperands> dev_t;
    ProblemSizes ref_sizes = plan.sizes();
    int64_t ref_rows = rows;
    if (transposed_w) {
      ref_spec.pass = Pass::kFprop;
      KILN_ASSIGN_OR_RETURN(DeviceOperands t, DeviceOperands::upload(transposed_w_operands(spec, h, n, k)));
      dev_t.emplace(std::move(t));
      ref_sizes = ProblemSizes{plan.sizes().m, k, n};
    } else if (forward_gemm) {
      ref_spec.pass = Pass::kFprop;
      const bool wgrad_copies = spec.pass == Pass::kWgrad;  // dense: the reduction is the copies' M columns
      ref_sizes = wgrad_copies ? ProblemSizes{n, k, rows} : ProblemSizes{plan.sizes().m, k, n};
      ref_rows = wgrad_copies ? n : rows;
    }
    DeviceOperands& ref_dev = dev_t ? *dev_t : dev;
    ref_spec.epilogue.clear();
    ref_spec.gate_up = GateUp::kNone;
    KILN_ASSIGN_OR_RETURN(std::optional<EpilogueProgram> program, spec_epilogue_program(spec));
    // The output's rows and columns per pass (compiler/plan/gemm_view.hpp): Y [rows, N], dX [rows, K],
    // dW [N, K]; the reference's f32 output has the plain GEMM's columns (n_ref).
    const bool fprop = spec.pass == Pass::kFprop;
    const int64_t n_out = fprop ? output_columns(spec, n) : k;
    const int64_t n_ref = fprop ? n : k;
    // wgrad: dW [N, K], grouped [E, N, K] (every expert's rows written, zeros for an empty one).
    const bool wgrad = spec.pass == Pass::kWgrad;
    const int64_t out_rows = wgrad ? n * experts : rows;
    const bool masked = spec.layout == GroupLayout::kMasked;
    std::vector<int64_t> ref_shape = wgrad && spec.op == Op::kGroupedGemm ? std::vector<int64_t>{experts, n, n_ref}
                                     : masked              ? std::vector<int64_t>{experts, m, n_ref}
                                                           : std::vector<int64_t>{out_rows, n_ref};
    KILN_ASSIGN_OR_RETURN(LoadedKernel * ref,
                          RuntimeAccess::impl(rt)->load(ref_spec, KernelFamily::kReferenceGemm, TileConfig{}, plan.arch()));
    KILN_ASSIGN_OR_RETURN(DeviceBuffer dref, DeviceBuffer::alloc(static_cast<size_t>(std::max<int64_t>(out_rows * n_ref * 4, 16))));
    KILN_RETURN_IF_ERROR(dref.fill_bytes(0xFF));
    DLTensor tref = dev.out_tensor();
    tref.data = dref.data();
    tref.dtype = {kDLFloat, 32, 1};
    tref.shape = ref_shape.data();
    KILN_ASSIGN_OR_RETURN(CheckedOperands c,
                          check_operands(ref_spec, ref_sizes, ref_dev.operands_with_out(&tref, /*with_epilogue=*/false)));
    kiln_dev::GemmParams gp = gemm_params(c, ref_sizes);
    LaunchShape ls = launch_shape(ref_spec, KernelFamily::kReferenceGemm, TileConfig{}, {ref_rows, ref_sizes.n, ref_sizes.k});
    void* args[] = {&gp};
    KILN_RETURN_IF_ERROR(RuntimeAccess::impl(rt)->prepare_on_device(ref, 0));
    KILN_RETURN_IF_ERROR(d->check(d->cuLaunchKernel(reinterpret_cast<CUfunction>(ref->kernel), ls.grid_x, ls.grid_y,
                                                    ls.grid_z, ls.block_x, 1, 1, ls.dynamic_smem, nullptr, args,
                                                    nullptr),
                                  "cuLaunchKernel(reference)"));
    KILN_RETURN_IF_ERROR(d->check(d->cuCtxSynchronize(), "reference kernel execution"));

    std::vector<uint8_t> hout(static_cast<size_t>(out_rows * n_out * ob));
    std::vector<float> href(static_cast<size_t>(out_rows * n_ref));
    KILN_RETURN_IF_ERROR(dev.out().download(hout.data(), hout.size()));
    KILN_RETURN_IF_ERROR(dref.download(href.data(), href.size() * 4));
    // Which rows some expert owns (the rest must stay poisoned).
    std::vector<uint8_t> owned(static_cast<size_t>(out_rows), 1);
    if (!wgrad && spec.layout == GroupLayout::kMasked) {
      const auto* counts = reinterpret_cast<const int32_t*>(h.group_rows.bytes.data());
      for (int64_t i = 0; i < rows; ++i) owned[static_cast<size_t>(i)] = (i % m) < counts[i / m];
    } else if (!wgrad && spec.layout == GroupLayout::kOffsets) {
      const auto* ends = reinterpret_cast<const int32_t*>(h.group_rows.bytes.data());
      for (int64_t i = 0; i < rows; ++i) owned[static_cast<size_t>(i)] = i < ends[experts - 1];
    }
    // The epilogue's expected output, [rows, n_out]: the epilogue of the reference's f32 values.
    if (program) {
      std::vector<int32_t> expert_of(static_cast<size_t>(rows), 0);
      if (spec.layout == GroupLayout::kMasked) {
        for (int64_t i = 0; i < rows; ++i) expert_of[static_cast<size_t>(i)] = static_cast<int32_t>(i / m);
      } else if (spec.layout == GroupLayout::kOffsets) {
        const auto* ends = reinterpret_cast<const int32_t*>(h.group_rows.bytes.data());
        int e = 0;
        for (int64_t i = 0; i < rows; ++i) {
          while (e < experts - 1 && i >= ends[e]) ++e;
          expert_of[static_cast<size_t>(i)] = e;
        }
      }
      std::vector<float> expect(static_cast<size_t>(rows * n_out));
      std::vector<float> vals(program->operands.size());
      const bool glu = spec.gate_up != GateUp::kNone;
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t e = expert_of[static_cast<size_t>(i)];
        const float* ref_row = href.data() + i * n;
        for (int64_t j = 0; j < n_out; ++j) {
          for (size_t sl = 0; sl < vals.size(); ++sl) vals[sl] = host_epilogue_value(h, sl, i, j, e, n_out);
          EpilogueValues ev;
          ev.operands = vals.data();
          if (!glu) {
            ev.acc = ref_row[j];
          } else if (spec.gate_up == GateUp::kInterleaved) {
            ev.gate = ref_row[2 * j];
            ev.up = ref_row[2 * j + 1];
          } else {  // stacked: gate in the first N / 2 columns, up in the last
            ev.gate = ref_row[j];
            ev.up = ref_row[n / 2 + j];
          }
          expect[static_cast<size_t>(i * n_out + j)] = evaluate_epilogue(*program, ev);
        }
      }
      href = std::move(expect);
    }
    double num = 0, den = 0;
    // accumulate=true: an element is untouched when it still holds its initial value.
    const uint8_t* before = spec.accumulate ? init.data() : nullptr;
    for (int64_t i = 0; i < out_rows * n_out; ++i) {
      bool poisoned = before ? std::memcmp(hout.data() + i * ob, before + i * ob, static_cast<size_t>(ob)) == 0
                     : ob == 2 ? reinterpret_cast<uint16_t*>(hout.data())[i] == 0xFFFF
                               : reinterpret_cast<uint32_t*>(hout.data())[i] == 0xFFFFFFFFu;
      if (!owned[static_cast<size_t>(i / n_out)]) {
        if (!poisoned) ++r.overwritten;
        continue;
      }
      if (before) poisoned = false;  // the sum may equal the initial value (a zero product)
      double ref_v = href[i] + (before ? decode_out(spec.out.format, before, i) : 0.0);
      double v = decode_out(spec.out.format, hout.data(), i);
      if (poisoned) {
        ++r.unwritten;
        continue;
      }
      if (!std::isfinite(v) && std::isfinite(ref_v)) {
        // Where the reference, stored in the output format (RNE), is +-Inf (past f16's or bf16's
        // range) the same Inf is the right answer, not an error.
        if (v != stored_as(spec.out.format, static_cast<float>(ref_v))) ++r.nonfinite;
        continue;
      }
      double e = std::fabs(v - ref_v);
      r.max_abs_err = std::max(r.max_abs_err, e);
      num += e * e;
      den += ref_v * ref_v;
    }
    r.rel_fro_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    // The reduction's length: K, or the backward pass's (dgrad N, wgrad M).
    const int64_t red = gemm_view(spec, ProblemSizes{rows, n, k}).k;
    r.tolerance = check_tolerance(spec, red);
    // ---- wgmma's FP8 accumulator is narrower than f32 (the kernel's own allowance).
    r.tolerance = kernel_check_tolerance(spec, plan.family_for(bucket_m), plan.config_for(bucket_m), red, r.tolerance);
    r.checked = true;
    r.passed = r.unwritten == 0 && r.nonfinite == 0 && r.overwritten == 0 && r.rel_fro_err <= r.tolerance;
  }

  if (o.time && o.timing == CheckOptions::Timing::kGraph) {
    // The first copy is the checked one; the others hold the same values at other addresses. Each call
    // writes its own output and shares the workspace (the graph's launches run one after another).
    const size_t bytes_per_call = h.a.bytes.size() + h.b.bytes.size() + h.a_scale.bytes.size() +
                                  h.b_scale.bytes.size() + h.out.bytes.size();
    KILN_ASSIGN_OR_RETURN(const int copies, graph_copies(d, bytes_per_call, o.max_copies));
    std::vector<DeviceOperands> extra;
    extra.reserve(static_cast<size_t>(copies - 1));
    for (int i = 1; i < copies; ++i) {
      KILN_ASSIGN_OR_RETURN(DeviceOperands c, DeviceOperands::upload(h));
      extra.push_back(std::move(c));
    }
    std::vector<Operands> all{ops};
    for (DeviceOperands& c : extra) all.push_back(c.operands());
    std::vector<std::function<Status(CUstream_st*)>> calls;
    for (const Operands& op : all) calls.push_back([&plan, op, ws, ws_bytes](CUstream_st* st) { return plan.run(op, ws, ws_bytes, st); });
    KILN_ASSIGN_OR_RETURN(r.median_ms, median_graph_ms(calls, o.warmup, o.repeats));
    r.timing = "graph";
    r.copies = copies;
  } else if (o.time) {
    KILN_ASSIGN_OR_RETURN(r.median_ms, median_event_ms([&] { return plan.run(ops, ws, ws_bytes, nullptr); },
                                                       o.warmup, o.repeats, o.flush_l2));
    r.timing = "events";
  }
  if (o.time) {
    r.tflops = 2.0 * rows * n * k / (r.median_ms * 1e-3) / 1e12;
    double bytes = static_cast<double>(h.a.bytes.size() + h.b.bytes.size() + h.a_scale.bytes.size() +
                                       h.b_scale.bytes.size()) +
                   static_cast<double>((spec.pass == Pass::kWgrad ? n * experts : rows) *
                                       (spec.pass == Pass::kFprop ? output_columns(spec, n) : k) * ob);
    r.gbps = bytes / (r.median_ms * 1e-3) / 1e9;
  }
  return r;
}

}  // namespace kiln

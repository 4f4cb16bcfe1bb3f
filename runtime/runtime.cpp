// Runtime and Plan: spec -> plan -> (compile | cache: compiler/service) -> load -> launch.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/env.hpp"
#include "compiler/plan/planner.hpp"
#include "compiler/plan/sm90_plan.hpp"  // split-K workspace sizes
#include "compiler/service/compile_service.hpp"
#include "runtime/dgrad_transpose.hpp"  // quantized dgrad: W's transposed copy
#include "runtime/mx_prepass.hpp"       // MXFP8 at large M through a bf16 pre-pass
#include "runtime/operands.hpp"
#include "runtime/quantize_launch.hpp"  // the quantize family's phases
#include "runtime/runtime_impl.hpp"
#include "runtime/sm90_launch.hpp"    // the sm90 family's launch
#include "runtime/tuned_configs.hpp"  // Runtime::plan's tuned-configs block
#include "templates/common/gemm_params.cuh"

namespace kiln {

// ---------------------------------------------------------------- RuntimeImpl

const StatusOr<const Driver*>& RuntimeImpl::driver() const { return Driver::get(); }

Status RuntimeImpl::device_status() const {
  auto d = Driver::get();
  return d.ok() ? Status::Ok() : d.status();
}

StatusOr<LoadedKernel*> RuntimeImpl::load(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                          const Arch& arch, const EpilogueProgram* epilogue) {
  // The load key is cheaper than the content key (no emit): spec text + family + config + arch.
  std::string lkey = print_spec(spec) + "|" + family_name(family) + "|" + cfg.to_string() + "|" + arch.name();
  FlightTable<StatusOr<LoadedKernel*>>::Flight flight = loaded_.join(lkey);  // memoized: loads stay
  if (!flight.owner) return flight.result.get();

  auto result = [&]() -> StatusOr<LoadedKernel*> {
    KILN_ASSIGN_OR_RETURN(const Driver* d, driver());
    KILN_ASSIGN_OR_RETURN(CompiledKernel ck,
                          compile_service->compile(spec, family, cfg, arch, epilogue, /*want_ptx=*/false));
    auto lk = std::make_unique<LoadedKernel>();
    lk->compiled = std::move(ck);
    KILN_RETURN_IF_ERROR(d->check(d->cuLibraryLoadData(&lk->library, lk->compiled.cubin.data(), nullptr, nullptr, 0,
                                                       nullptr, nullptr, 0),
                                  "cuLibraryLoadData"));
    loads.fetch_add(1);
    KILN_RETURN_IF_ERROR(
        d->check(d->cuLibraryGetKernel(&lk->kernel, lk->library, lk->compiled.entry.c_str()), "cuLibraryGetKernel"));
    return lk.release();  // owned by the runtime for the process lifetime (libraries stay loaded)
  }();
  // Failed loads are not memoized forever: drop the entry so a later call can retry.
  if (!result.ok()) loaded_.erase(lkey);
  flight.owner->set_value(result);
  return result;
}

Status RuntimeImpl::prepare_on_device(LoadedKernel* k, int device) {
  if (device < 0 || device >= 64) return InvalidArgument("device ordinal " + std::to_string(device) + " out of range");
  if (k->smem_set_devices.load(std::memory_order_acquire) & (1ull << device)) return Status::Ok();
  std::lock_guard<std::mutex> lock(k->device_mu);
  if (k->smem_set_devices.load() & (1ull << device)) return Status::Ok();
  KILN_ASSIGN_OR_RETURN(const Driver* d, driver());
  CUdevice dev;
  KILN_RETURN_IF_ERROR(d->check(d->cuDeviceGet(&dev, device), "cuDeviceGet"));
  if (k->compiled.smem_dynamic > 48 * 1024) {
    KILN_RETURN_IF_ERROR(d->check(d->cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                          k->compiled.smem_dynamic, k->kernel, dev),
                                  "cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"));
  }
  k->smem_set_devices.fetch_or(1ull << device, std::memory_order_release);
  return Status::Ok();
}

// ---------------------------------------------------------------- PlanImpl

PlanImpl::PlanImpl(std::shared_ptr<RuntimeImpl> runtime, PlanRecord record)
    : PlanRecord(std::move(record)), rt(std::move(runtime)) {
  if (prepass_plan) prepass_gemm = std::make_shared<const PlanImpl>(rt, *prepass_plan);
}

const std::vector<EpilogueOperand>& PlanImpl::epilogue_operands() const {
  static const std::vector<EpilogueOperand> kNone;
  return epilogue ? epilogue->operands : kNone;
}

StatusOr<LoadedKernel*> PlanImpl::kernel_for(int bucket) const {
  LoadedKernel* k = kernels[bucket].load(std::memory_order_acquire);
  if (k) return k;
  KILN_ASSIGN_OR_RETURN(k, rt->load(spec, families[bucket], configs[bucket], arch, epilogue_program()));
  kernels[bucket].store(k, std::memory_order_release);
  return k;
}

// ---------------------------------------------------------------- Plan

const KernelSpec& Plan::spec() const { return impl_->spec; }
const ProblemSizes& Plan::sizes() const { return impl_->sizes; }
KernelFamily Plan::family() const { return impl_->family; }
const Arch& Plan::arch() const { return impl_->arch; }
TileConfig Plan::config_for(int64_t m) const { return impl_->configs[bucket_index(m)]; }
KernelFamily Plan::family_for(int64_t m) const { return impl_->families[bucket_index(m)]; }
size_t PlanImpl::workspace_bytes(int bucket, int64_t m) const {
  const int64_t own = launch[bucket].workspace_bytes(m);
  if (transposed_w.experts == 0) return static_cast<size_t>(own);
  return static_cast<size_t>(TransposedWLayout::offset(own) + transposed_w.bytes());
}

size_t Plan::workspace_bytes(int64_t m) const { return impl_->workspace_bytes(bucket_index(m), m); }

// The bf16 plan's bucket for m rows of X: grouped plans pick it by rows per expert, as tunings do.
static int prepass_bucket(const PlanImpl& p, int64_t m) { return bucket_index(rows_per_expert(p.spec, m)); }

TileConfig Plan::mx_prepass_config_for(int64_t m) const {
  const PlanImpl* g = impl_->prepass_gemm.get();
  return g != nullptr ? g->configs[prepass_bucket(*impl_, m)] : TileConfig{};
}

KernelFamily Plan::mx_prepass_family_for(int64_t m) const {
  const PlanImpl* g = impl_->prepass_gemm.get();
  return g != nullptr ? g->families[prepass_bucket(*impl_, m)] : impl_->family;
}

size_t Plan::mx_prepass_workspace_bytes(int64_t m) const {
  const PlanImpl& p = *impl_;
  if (!p.prepass_gemm) return 0;
  return static_cast<size_t>(p.prepass_layout.bytes(m));
}

Status Plan::prepare() const {
  KILN_RETURN_IF_ERROR(impl_->rt->device_status());
  KILN_ASSIGN_OR_RETURN(const Driver* d, impl_->rt->driver());
  CUcontext cur = nullptr;
  d->cuCtxGetCurrent(&cur);
  int device = 0;
  if (cur) {
    CUdevice dev;
    if (d->cuCtxGetDevice(&dev) == CUDA_SUCCESS) device = static_cast<int>(dev);
  }
  ScopedContext ctx;
  KILN_RETURN_IF_ERROR(ctx.enter(d, device));
  size_t workspace = 0;
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    KILN_ASSIGN_OR_RETURN(LoadedKernel * k, impl_->kernel_for(static_cast<int>(b)));
    KILN_RETURN_IF_ERROR(impl_->rt->prepare_on_device(k, device));
    // Split-K buckets: the workspace for the largest M that maps to them (below the next bucket).
    const int64_t m_hi = kMBuckets[std::min(b + 1, kMBuckets.size() - 1)];
    workspace = std::max(workspace, impl_->workspace_bytes(static_cast<int>(b), m_hi));
  }
  if (workspace > 0) KILN_RETURN_IF_ERROR(impl_->workspace.get(*d, device, workspace, nullptr).status());
  // Quantized dgrad: W's transpose kernel.
  if (impl_->transposed_w.experts > 0)
    KILN_RETURN_IF_ERROR(dgrad_transpose_kernel(*impl_, device, nullptr, /*in_run=*/false).status());
  // MXFP8 pre-pass: the conversion kernel and the bf16 plan's kernels of the buckets it serves.
  if (const PlanImpl* g = impl_->prepass_gemm.get()) {
    KILN_RETURN_IF_ERROR(mx_prepass_convert_kernel(*impl_, device, nullptr, /*in_run=*/false).status());
    for (int b = bucket_index(kMxPrepassMinM); b < static_cast<int>(kMBuckets.size()); ++b) {
      KILN_ASSIGN_OR_RETURN(LoadedKernel * k, g->kernel_for(b));
      KILN_RETURN_IF_ERROR(impl_->rt->prepare_on_device(k, device));
    }
  }
  return Status::Ok();
}

Status not_capturing(const Driver& d, CUstream_st* stream, const std::string& what) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  KILN_RETURN_IF_ERROR(d.check(d.cuStreamIsCapturing(stream, &capture), "cuStreamIsCapturing"));
  if (capture == CU_STREAM_CAPTURE_STATUS_NONE) return Status::Ok();
  return NotReady("Plan::run during CUDA-graph capture, but " + what +
                  " is not loaded; call prepare() before capturing");
}

namespace {

// The loaded kernel of `bucket`: loads it unless the stream is capturing (NOT_READY then).
StatusOr<LoadedKernel*> bucket_kernel(const PlanImpl& p, const Driver* d, int bucket, int64_t m, CUstream_st* stream) {
  LoadedKernel* k = p.kernels[bucket].load(std::memory_order_acquire);
  if (k != nullptr) return k;
  KILN_RETURN_IF_ERROR(not_capturing(*d, stream, "the kernel for M=" + std::to_string(m)));
  return p.kernel_for(bucket);
}

// Quantize specs (a -> out, out_scale, out_global), one launch per phase.
Status run_quantize(const PlanImpl& p, const Operands& ops, CUstream_st* stream) {
  KILN_ASSIGN_OR_RETURN(CheckedQuantize q, check_quantize_operands(p.spec, p.sizes, ops));
  const StatusOr<const Driver*>& drv = p.rt->driver();
  if (!drv.ok()) return drv.status().with_context("Plan::run");
  const Driver* d = *drv;
  ScopedContext ctx;
  KILN_RETURN_IF_ERROR(ctx.enter(d, q.device));
  const int bucket = bucket_index(q.m);
  KILN_ASSIGN_OR_RETURN(LoadedKernel * k, bucket_kernel(p, d, bucket, q.m, stream));
  KILN_RETURN_IF_ERROR(p.rt->prepare_on_device(k, q.device));
  return quantize_launch(*d, *k, p.launch[bucket], p.sizes.k, q, reinterpret_cast<CUstream>(stream));
}

}  // namespace

// The hot path (target: dispatch of a prepared plan <= 3 us host time). With the kernel loaded:
// the operand checks (no allocation, messages built on errors only), one atomic load each for the
// retained context and the bucket's kernel, one cuCtxGetCurrent, one cuLaunchKernelEx; no lock.
Status Plan::run(const Operands& ops, void* workspace, size_t workspace_bytes, CUstream_st* stream) const {
  return run_plan(*impl_, ops, workspace, workspace_bytes, stream);
}

Status run_plan(const PlanImpl& p, const Operands& ops, void* workspace, size_t workspace_bytes,
                CUstream_st* stream) {
  if (p.family == KernelFamily::kQuantize) return run_quantize(p, ops, stream);
  CheckedOperands c;
  KILN_RETURN_IF_ERROR(check_operands(p.spec, p.sizes, ops, p.epilogue_operands(), c));
  const StatusOr<const Driver*>& drv = p.rt->driver();
  if (!drv.ok()) return drv.status().with_context("Plan::run");
  const Driver* d = *drv;
  // No rows: nothing to write, except wgrad's dW [N, K] = 0 (a sum over no rows; accumulate=true adds
  // nothing).
  if (c.m == 0 && (p.spec.pass != Pass::kWgrad || p.spec.accumulate)) return Status::Ok();
  ScopedContext ctx;
  KILN_RETURN_IF_ERROR(ctx.enter(d, c.device));
  if (c.m == 0) {  // dW [N, K], grouped [E, N, K] with the experts' rows contiguous (check_operands)
    const size_t eb = static_cast<size_t>(format_bits(p.spec.out.format) / 8);
    const size_t dw_rows = static_cast<size_t>(p.sizes.n) * static_cast<size_t>(c.experts > 0 ? c.experts : 1);
    return d->check(d->cuMemsetD2D8Async(reinterpret_cast<CUdeviceptr>(c.out), static_cast<size_t>(c.ldc) * eb, 0,
                                         static_cast<size_t>(p.sizes.k) * eb, dw_rows,
                                         reinterpret_cast<CUstream>(stream)),
                    "cuMemsetD2D8Async(wgrad of no rows)");
  }
  // MXFP8 at large M with the caller's workspace for it: bf16 pre-pass + bf16 kernel.
  if (p.prepass_gemm) {
    KILN_ASSIGN_OR_RETURN(bool prepass, mx_prepass_applies(p, c, workspace, workspace_bytes));
    if (prepass) return mx_prepass_run(p, c, ops, workspace, reinterpret_cast<CUstream>(stream));
  }
  // Grouped problems pick the bucket by the expected rows per expert (runtime/operands.hpp).
  const int bucket = bucket_index(rows_per_expert(p.spec, c.m));
  KILN_ASSIGN_OR_RETURN(LoadedKernel * k, bucket_kernel(p, d, bucket, c.m, stream));
  KILN_RETURN_IF_ERROR(p.rt->prepare_on_device(k, c.device));
  kiln_dev::GemmParams gp = gemm_params(c, p.sizes);
  // ---- The sm90 family takes TMA tensor maps and a persistent grid.
  if (p.families[bucket] == KernelFamily::kSm90Gemm) {
    // Split-K configs and quantized dgrad's transposed W need a workspace: the caller's (zero-filled before
    // its first use), else the plan's.
    if (p.configs[bucket].split_k > 1) {
      const int64_t slots = p.launch[bucket].split_slots(c.m);
      if (slots > kSm90SplitCounterSlots)
        return InvalidArgument("Plan::run: M=" + std::to_string(c.m) + " with the split-K config " +
                               p.configs[bucket].to_string() + " makes " + std::to_string(slots) +
                               " tile slots; split-K takes at most " + std::to_string(kSm90SplitCounterSlots) +
                               " (tune this M bucket, or pin a config without split_k)");
    }
    void* ws = nullptr;
    const size_t need = p.workspace_bytes(bucket, c.m);
    if (need > 0) {
      if (workspace != nullptr) {
        if (workspace_bytes < need)
          return InvalidArgument("Plan::run: workspace of " + std::to_string(workspace_bytes) + " bytes; M=" +
                                 std::to_string(c.m) + " with config " + p.configs[bucket].to_string() + " needs " +
                                 std::to_string(need) + " (Plan::workspace_bytes(m)), zero-filled before first use");
        ws = workspace;
      } else {
        KILN_ASSIGN_OR_RETURN(ws, p.workspace.get(*d, c.device, need, reinterpret_cast<CUstream>(stream)));
      }
    }
    // Quantized dgrad: W's transposed copy after the bucket's own workspace; the GEMM reads it.
    if (p.transposed_w.experts > 0) {
      if ((reinterpret_cast<uintptr_t>(ws) & 15) != 0)
        return InvalidArgument("Plan::run: the workspace at " + std::to_string(reinterpret_cast<uintptr_t>(ws)) +
                               " is not 16-byte aligned (cuMemAlloc and torch allocations are)");
      void* region = static_cast<uint8_t*>(ws) + TransposedWLayout::offset(p.launch[bucket].workspace_bytes(c.m));
      KILN_RETURN_IF_ERROR(dgrad_transpose_run(p, c, region, reinterpret_cast<CUstream>(stream), gp));
    }
    return sm90_launch(*d, *k, p.spec, p.configs[bucket], p.launch[bucket], gp, c.device,
                       reinterpret_cast<CUstream>(stream), ws, p.arch.sm_cap);
  }
  const LaunchShape ls = p.launch[bucket].shape(c.m);
  void* args[] = {&gp};
  // Programmatic dependent launch where the kernel was compiled for sm_90+ (its entry waits for the
  // previous kernel before touching global memory: compiler/emit/emit.cpp).
  return launch_kernel(*d, reinterpret_cast<CUfunction>(k->kernel), ls, reinterpret_cast<CUstream>(stream),
                       args, p.arch.sm() >= 90, "cuLaunchKernelEx");
}

std::string Plan::describe_json() const {
  const PlanImpl& p = *impl_;
  nlohmann::json j;
  j["spec"] = p.canonical;
  j["family"] = family_name(p.family);
  j["arch"] = p.arch.name();
  j["n"] = p.sizes.n;
  j["k"] = p.sizes.k;
  nlohmann::json buckets = nlohmann::json::array();
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    nlohmann::json bj{{"m_max", kMBuckets[b]}, {"config", p.configs[b].to_string()}};
    if (p.families[b] != p.family) bj["family"] = family_name(p.families[b]);  // a per-bucket exception
    // Whether a bucket of the sm90 family with e4m3 / e5m2 operands promotes its accumulator
    // per K tile ("promoted") or adds into wgmma's own FP8 accumulator ("fast", like cuBLAS's fast
    // accumulation). Other buckets carry no field: they accumulate in f32, or always promote (the
    // warpgroup decode kernel, fused MXFP8).
    if (p.families[b] == KernelFamily::kSm90Gemm && format_is_fp8(p.spec.a.format))
      bj["fp8_accumulation"] = sm90_promotes(p.spec, p.configs[b]) ? "promoted" : "fast";
    buckets.push_back(std::move(bj));
  }
  j["buckets"] = buckets;
  // MXFP8 pre-pass (runtime/mx_prepass.hpp): from which M, and the bf16 kernel's config per bucket it serves.
  if (const PlanImpl* g = p.prepass_gemm.get()) {
    nlohmann::json pb = nlohmann::json::array();
    for (int b = bucket_index(kMxPrepassMinM); b < static_cast<int>(kMBuckets.size()); ++b)
      pb.push_back({{"m_max", kMBuckets[b]}, {"config", g->configs[b].to_string()}});
    j["mx_prepass"] = {{"min_m", kMxPrepassMinM}, {"spec", g->canonical}, {"buckets", pb}};
  }
  // Quantized dgrad: W's transposed copy, written before each GEMM (runtime/dgrad_transpose.hpp).
  if (p.transposed_w.experts > 0) j["w_transpose"] = {{"workspace_bytes", p.transposed_w.bytes()}};
  return j.dump();
}

// ---------------------------------------------------------------- Runtime

Runtime::Runtime(std::shared_ptr<RuntimeImpl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

StatusOr<std::shared_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  auto impl = std::make_shared<RuntimeImpl>();
  impl->options = options;
  if (!options.disable_cache && !env::flag(env::kDisableCache)) {
    auto c = options.cache_dir.empty() ? KernelCache::open_default() : KernelCache::open(options.cache_dir);
    if (c.ok()) {
      impl->cache = std::move(*c);
    } else {
      return c.status().with_context("Runtime::create: opening the kernel cache (set KILN_DISABLE_CACHE=1 to run without it)");
    }
  }
  impl->compile_service = std::make_unique<CompileService>(impl->cache.get());
  return std::shared_ptr<Runtime>(new Runtime(std::move(impl)));
}

Status Runtime::device_status() const { return impl_->device_status(); }

StatusOr<Arch> Runtime::device_arch() const {
  KILN_ASSIGN_OR_RETURN(const Driver* d, impl_->driver());
  int device = 0;
  CUcontext cur = nullptr;
  if (d->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur) {
    CUdevice dev;
    if (d->cuCtxGetDevice(&dev) == CUDA_SUCCESS) device = static_cast<int>(dev);
  }
  CUdevice dev;
  KILN_RETURN_IF_ERROR(d->check(d->cuDeviceGet(&dev, device), "cuDeviceGet"));
  auto attribute = [&](CUdevice_attribute which, const char* what) -> StatusOr<int> {
    int v = 0;
    KILN_RETURN_IF_ERROR(d->check(d->cuDeviceGetAttribute(&v, which, dev), what));
    return v;
  };
  KILN_ASSIGN_OR_RETURN(int major, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuDeviceGetAttribute(cc major)"));
  KILN_ASSIGN_OR_RETURN(int minor, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuDeviceGetAttribute(cc minor)"));
  KILN_ASSIGN_OR_RETURN(int sms, attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "cuDeviceGetAttribute(SM count)"));
  KILN_ASSIGN_OR_RETURN(int smem, attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                            "cuDeviceGetAttribute(shared memory per block)"));
  KILN_ASSIGN_OR_RETURN(int l2, attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "cuDeviceGetAttribute(L2 size)"));
  // The rates are not device attributes: the named part's where the table knows it (gpus.cpp).
  Arch a = arch_for_part(major * 10 + minor, sms);
  if (smem > 0) a.smem_per_block = smem;
  if (l2 > 0) a.l2_bytes = l2;
  a.sm_cap = impl_->options.max_sms;
  return a;
}

// The facts of a plan's arch when the caller named only the instruction set: the device's when it is
// that arch, else the part KILN_TUNING_DEVICE names when it is, else the arch's reference part.
Arch RuntimeImpl::with_facts(const Arch& arch, const StatusOr<Arch>& device) const {
  Arch a = arch;
  if (a.sm_count == 0) {
    if (device.ok() && *device == a) {
      a = *device;
    } else if (auto named = env::get(env::kTuningDevice)) {
      auto td = parse_tuning_device(*named, /*nvrtc_major=*/1);
      if (td.ok() && td->key.cc == a.sm()) {
        Arch part = arch_for_part(td->key.cc, td->key.sm_count);
        part.major = a.major;
        part.minor = a.minor;
        part.arch_specific = a.arch_specific;
        a = part;
      }
    }
  }
  if (options.max_sms > 0) a.sm_cap = options.max_sms;
  return a;
}

StatusOr<Plan> Runtime::plan(const KernelSpec& spec, const ProblemSizes& sizes, std::optional<Arch> arch) {
  PlanOptions options;
  options.arch = std::move(arch);
  return plan(spec, sizes, options);
}

StatusOr<Plan> Runtime::plan(const KernelSpec& spec, const ProblemSizes& sizes, const PlanOptions& options) {
  // The device is asked only when the caller's arch does not already carry its facts.
  Arch a;
  if (options.arch && options.arch->sm_count > 0) {
    a = impl_->with_facts(*options.arch, NoDevice("not asked"));
  } else {
    const StatusOr<Arch> device = device_arch();
    a = impl_->with_facts(options.arch ? *options.arch : device.ok() ? *device : Arch{9, 0, true}, device);
  }
  // All planning is compiler/plan's (planner.hpp); the runtime supplies its tunings (tuned_configs.hpp).
  StoreTunings tunings(*this);
  KILN_ASSIGN_OR_RETURN(PlanRecord record, make_plan(spec, sizes, a, options, &tunings));
  return Plan(std::make_shared<const PlanImpl>(impl_, std::move(record)));
}

StatusOr<CompiledKernel> Runtime::compile(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                          const Arch& arch, bool want_ptx) {
  return impl_->compile_service->compile(spec, family, cfg, arch, /*epilogue=*/nullptr, want_ptx);
}

RuntimeCounters Runtime::counters() const {
  RuntimeCounters c;
  c.compiles = impl_->compile_service->compiles();
  c.cache_hits = impl_->compile_service->cache_hits();
  c.loads = impl_->loads.load();
  return c;
}

std::string Runtime::cache_path() const { return impl_->cache ? impl_->cache->path() : std::string(); }

}  // namespace kiln

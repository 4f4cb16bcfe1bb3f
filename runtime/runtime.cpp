// Runtime and Plan: spec -> plan -> (compile | cache) -> load -> launch.
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "cache/cache_key.hpp"
#include "common/env.hpp"
#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/sm90_plan.hpp"  // split-K workspace sizes
#include "runtime/mx_prepass.hpp"       // MXFP8 at large M through a bf16 pre-pass
#include "runtime/operands.hpp"
#include "runtime/quantize_launch.hpp"  // the quantize family's phases
#include "runtime/runtime_impl.hpp"
#include "runtime/sm90_launch.hpp"    // the sm90 family's launch
#include "runtime/tuned_configs.hpp"  // Runtime::plan's tuned-configs block
#include "templates/common/gemm_params.cuh"
#include "templates/templates.hpp"

namespace kiln {

// ---------------------------------------------------------------- RuntimeImpl

const StatusOr<const Driver*>& RuntimeImpl::driver() const { return Driver::get(); }

Status RuntimeImpl::device_status() const {
  auto d = Driver::get();
  return d.ok() ? Status::Ok() : d.status();
}

StatusOr<CompiledKernel> RuntimeImpl::compile(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                              const Arch& arch, bool want_ptx) {
  KILN_ASSIGN_OR_RETURN(EmittedKernel em, emit_kernel(spec, family, cfg, arch));
  CompileOptions copts;
  copts.want_ptx = want_ptx;
  KILN_ASSIGN_OR_RETURN(std::string nvrtc_ver, nvrtc_version());
  KeyInputs ki;
  ki.template_hash = template_tree_hash();
  ki.source = em.source;
  ki.nvrtc_version = nvrtc_ver;
  ki.options = nvrtc_options(arch, copts);
  ki.arch = arch.name();
  std::string key = kernel_cache_key(ki);

  CompiledKernel out;
  out.key = key;
  out.entry = em.entry;
  out.source = em.source;
  out.threads = em.threads;
  out.smem_dynamic = em.smem_bytes;

  auto from_cache = [&]() -> bool {
    if (!cache || want_ptx) return false;
    auto hit = cache->get(key);  // a failing read is not fatal: the cache is an optimisation
    if (!hit.ok() || !hit->has_value()) return false;
    const CachedKernel& c = **hit;
    out.cubin = c.cubin;
    out.registers = c.registers;
    out.smem_static = c.smem;
    out.spill_stores = c.spills;
    out.spill_loads = c.spills;
    out.compile_ms = c.compile_ms;
    out.from_cache = true;
    cache_hits.fetch_add(1);
    return true;
  };
  if (from_cache()) return out;

  // Single flight: concurrent callers of the same key wait for the first one's compile. The owner
  // writes the cache before it leaves the flight table, and re-reads the cache after joining it, so
  // a key is compiled once per process (with the cache on) however the threads interleave.
  std::promise<StatusOr<CompileResult>> promise;
  std::shared_future<StatusOr<CompileResult>> fut;
  bool owner = false;
  const std::string flight_key = key + (want_ptx ? "+ptx" : "");
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = compiling_.find(flight_key);
    if (it != compiling_.end()) {
      fut = it->second;
    } else {
      fut = promise.get_future().share();
      compiling_.emplace(flight_key, fut);
      owner = true;
    }
  }
  if (owner) {
    StatusOr<CompileResult> compiled = Internal("unset");
    if (from_cache()) {
      CompileResult r;
      r.cubin = out.cubin;
      r.registers = out.registers;
      r.smem_static = out.smem_static;
      r.spill_stores = out.spill_stores;
      r.spill_loads = out.spill_loads;
      r.compile_ms = out.compile_ms;
      compiled = r;
    } else {
      compiled = compile_cuda(em.source, arch, copts);
      if (compiled.ok()) {
        compiles.fetch_add(1);
        if (cache && !want_ptx) {
          CachedKernel c;
          c.key = key;
          c.arch = arch.name();
          c.entry = em.entry;
          c.spec = print_spec(spec);
          // Families without a tile config are listed by name.
          const bool tiled = family != KernelFamily::kReferenceGemm && family != KernelFamily::kMxDequant;
          c.config = tiled ? cfg.to_string() : family_name(family);
          c.cubin = compiled->cubin;
          c.registers = compiled->registers;
          c.smem = compiled->smem_static;
          c.spills = std::max(compiled->spill_stores, compiled->spill_loads);
          c.compile_ms = compiled->compile_ms;
          (void)cache->put(c);  // best effort: a full disk must not fail the launch
        }
      }
    }
    promise.set_value(compiled);
    std::lock_guard<std::mutex> lock(mu_);
    compiling_.erase(flight_key);
  }
  StatusOr<CompileResult> shared = fut.get();
  if (!shared.ok()) return shared.status();
  if (out.from_cache) return out;
  const CompileResult& r = *shared;
  out.cubin = r.cubin;
  out.ptx = r.ptx;
  out.log = r.log;
  out.registers = r.registers;
  out.smem_static = r.smem_static;
  out.stack_frame = r.stack_frame;
  out.spill_stores = r.spill_stores;
  out.spill_loads = r.spill_loads;
  out.compile_ms = r.compile_ms;
  return out;
}

StatusOr<LoadedKernel*> RuntimeImpl::load(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                          const Arch& arch) {
  // The load key is cheaper than the content key (no emit): spec text + family + config + arch.
  std::string lkey = print_spec(spec) + "|" + family_name(family) + "|" + cfg.to_string() + "|" + arch.name();
  std::promise<StatusOr<LoadedKernel*>> promise;
  std::shared_future<StatusOr<LoadedKernel*>> fut;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = loaded_.find(lkey);
    if (it != loaded_.end()) {
      fut = it->second;
    } else {
      fut = promise.get_future().share();
      loaded_.emplace(lkey, fut);
      owner = true;
    }
  }
  if (!owner) return fut.get();

  auto result = [&]() -> StatusOr<LoadedKernel*> {
    KILN_ASSIGN_OR_RETURN(const Driver* d, driver());
    KILN_ASSIGN_OR_RETURN(CompiledKernel ck, compile(spec, family, cfg, arch, false));
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
  if (!result.ok()) {
    // Failed loads are not memoized forever: drop the entry so a later call can retry.
    std::lock_guard<std::mutex> lock(mu_);
    loaded_.erase(lkey);
  }
  promise.set_value(result);
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

StatusOr<LoadedKernel*> PlanImpl::kernel_for(int bucket) const {
  LoadedKernel* k = kernels[bucket].load(std::memory_order_acquire);
  if (k) return k;
  KILN_ASSIGN_OR_RETURN(k, rt->load(spec, families[bucket], configs[bucket], arch));
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
  return static_cast<size_t>(launch[bucket].workspace_bytes(m));
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
  KILN_RETURN_IF_ERROR(check_operands(p.spec, p.sizes, ops, p.epilogue_operands, c));
  const StatusOr<const Driver*>& drv = p.rt->driver();
  if (!drv.ok()) return drv.status().with_context("Plan::run");
  const Driver* d = *drv;
  if (c.m == 0) return Status::Ok();
  ScopedContext ctx;
  KILN_RETURN_IF_ERROR(ctx.enter(d, c.device));
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
    // Split-K configs need a workspace: the caller's (zero-filled before its first use), else the plan's.
    void* ws = nullptr;
    if (p.configs[bucket].split_k > 1) {
      const int64_t slots = p.launch[bucket].split_slots(c.m);
      if (slots > kSm90SplitCounterSlots)
        return InvalidArgument("Plan::run: M=" + std::to_string(c.m) + " with the split-K config " +
                               p.configs[bucket].to_string() + " makes " + std::to_string(slots) +
                               " tile slots; split-K takes at most " + std::to_string(kSm90SplitCounterSlots) +
                               " (tune this M bucket, or pin a config without split_k)");
      const size_t need = p.workspace_bytes(bucket, c.m);
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
  KILN_RETURN_IF_ERROR(validate_spec(spec));
  // The device is asked only when the caller's arch does not already carry its facts (the MXFP8
  // pre-pass plans its bf16 problem with this plan's arch, facts included).
  Arch a;
  if (arch && arch->sm_count > 0) {
    a = impl_->with_facts(*arch, NoDevice("not asked"));
  } else {
    const StatusOr<Arch> device = device_arch();
    a = impl_->with_facts(arch ? *arch : device.ok() ? *device : Arch{9, 0, true}, device);
  }
  KILN_ASSIGN_OR_RETURN(KernelFamily fam, select_family(spec, a));
  // sizes.m is a hint (0: any M); every family's can_implement takes M = 0, and rules on M (e.g.
  // quantize transpose=true) are checked again per call.
  KILN_RETURN_IF_ERROR(can_implement(spec, a, sizes));
  auto impl = std::make_shared<PlanImpl>();
  impl->rt = impl_;
  impl->spec = spec;
  impl->canonical = print_spec(spec);
  impl->sizes = sizes;
  impl->arch = a;
  impl->family = fam;
  impl->families.fill(fam);
  // The epilogue's vector operands, so that run() checks them without parsing.
  {
    KILN_ASSIGN_OR_RETURN(std::optional<EpilogueProgram> program, spec_epilogue_program(spec));
    if (program) impl->epilogue_operands = program->operands;
  }
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    ProblemSizes s = sizes;
    s.m = kMBuckets[b];
    impl->configs[b] = default_config(spec, a, s);
  }
  // ---- BEGIN tuned configs (runtime/tuned_configs.hpp, docs/tuning.md) ----
  // Per bucket: in-memory -> user database -> pre-tuned tables -> (opt-in online tuning) -> the
  // heuristic above. Never fails the plan.
  const auto sources = apply_tuned_configs(*this, *impl);
  // ---- END tuned configs ----
  // ---- Heuristic buckets that measured faster on the portable family run there
  // (grouped FP8 at a few rows per expert; compiler/plan/sm90_plan.hpp sm90_portable_bucket). Tuned
  // and pinned buckets run on the family their record or override names (apply_tuned_configs).
  // Dense problems of at most 16 rows that the decode kernel takes run on it (the portable family's
  // TileConfig::decode; measured faster than the sm90 family on every decode shape on the H200,
  // docs/performance.md).
  if (fam == KernelFamily::kSm90Gemm) {
    for (size_t b = 0; b < kMBuckets.size(); ++b) {
      if (sources[b] != ConfigSource::kHeuristic) continue;
      ProblemSizes s = sizes;
      s.m = kMBuckets[b];
      if (!sm90_portable_bucket(spec, kMBuckets[b]) && !decode_bucket(spec, a, kMBuckets[b])) continue;
      const TileConfig portable = default_config(spec, a, KernelFamily::kSm80Gemm, s);
      if (!check_config(spec, a, KernelFamily::kSm80Gemm, portable).ok()) continue;
      impl->families[b] = KernelFamily::kSm80Gemm;
      impl->configs[b] = portable;
    }
  }
  // ---- MXFP8 at large M, the bf16 pre-pass's plan (runtime/mx_prepass.hpp). A bf16 plan
  // that cannot be made (e.g. an output format the bf16 kernel lacks) leaves the fused kernel alone.
  if (sm90_mx_prepass_supported(spec, a)) {
    StatusOr<Plan> bf16 = plan(sm90_mx_prepass_gemm_spec(spec), sizes, a);
    if (bf16.ok()) {
      impl->prepass_gemm = bf16->impl_;
      impl->prepass_convert_spec = sm90_mx_prepass_convert_spec(spec);
      impl->prepass_convert_launch =
          make_launch_rule(spec, KernelFamily::kMxDequant, TileConfig{}, sizes.n, sizes.k);
      impl->prepass_layout = make_mx_prepass_layout(spec, sizes.n, sizes.k);
    }
  }
  // Every bucket's launch rule, from its final family and config.
  for (size_t b = 0; b < kMBuckets.size(); ++b)
    impl->launch[b] = make_launch_rule(spec, impl->families[b], impl->configs[b], sizes.n, sizes.k);
  return Plan(std::move(impl));
}

StatusOr<CompiledKernel> Runtime::compile(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                          const Arch& arch, bool want_ptx) {
  return impl_->compile(spec, family, cfg, arch, want_ptx);
}

RuntimeCounters Runtime::counters() const {
  RuntimeCounters c;
  c.compiles = impl_->compiles.load();
  c.cache_hits = impl_->cache_hits.load();
  c.loads = impl_->loads.load();
  return c;
}

std::string Runtime::cache_path() const { return impl_->cache ? impl_->cache->path() : std::string(); }

}  // namespace kiln

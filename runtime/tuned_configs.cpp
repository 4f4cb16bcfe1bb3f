#include "runtime/tuned_configs.hpp"

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "cache/cache_key.hpp"
#include "common/env.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/spec/spec.hpp"
#include "runtime/driver/driver.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/tuning_module.hpp"

namespace kiln {

static_assert(kTuningMBuckets == kMBuckets, "tunings are keyed by the buckets Plan::run dispatches on");

namespace {

thread_local bool t_in_online_tuning = false;  // the online tuner's own plans consult no tuner

struct OnlineState {
  std::mutex mu;
  OnlineTuner tuner;
  std::optional<bool> enabled;  // the API flag; unset: KILN_AUTOTUNE
};
OnlineState& online_state() {
  static OnlineState s;
  return s;
}

StatusOr<int> nvrtc_major_now() {
  KILN_ASSIGN_OR_RETURN(std::string v, nvrtc_version());
  const size_t dot = v.find('.');
  int major = 0;
  for (char c : v.substr(0, dot)) {
    if (c < '0' || c > '9') return CompileError("NVRTC reported an unparsable version '" + v + "'");
    major = major * 10 + (c - '0');
  }
  return major;
}

StatusOr<int> parse_int(std::string_view field, std::string_view v) {
  if (v.empty() || v.size() > 9)
    return InvalidArgument("tuning device: " + std::string(field) + "='" + std::string(v) +
                           "' is not a number");
  int out = 0;
  for (char c : v) {
    if (c < '0' || c > '9')
      return InvalidArgument("tuning device: " + std::string(field) + "='" + std::string(v) +
                             "' is not a number");
    out = out * 10 + (c - '0');
  }
  return out;
}

// Records each untuned (device, problem, bucket) once per process: plans are made at start-up and
// may be made again and again; one row (and one count) per process is what offline tuning needs.
bool first_untuned_sighting(const TuningDevice& d, const TuningProblem& p, int64_t bucket) {
  static std::mutex mu;
  static std::set<std::tuple<TuningHardKey, TuningProblem, int64_t>> seen;
  std::lock_guard<std::mutex> lock(mu);
  return seen.emplace(d.key, p, bucket).second;
}

ConfigSource source_of(TuningSource s) {
  switch (s) {
    case TuningSource::kMemory: return ConfigSource::kMemory;
    case TuningSource::kUserDb: return ConfigSource::kUserDb;
    case TuningSource::kPretuned: return ConfigSource::kPretuned;
  }
  return ConfigSource::kHeuristic;
}

}  // namespace

std::optional<std::pair<TileConfig, KernelFamily>> usable_tuned_config(const TuningRecord& r, const KernelSpec& spec,
                                                                       KernelFamily family, const Arch& arch) {
  KernelFamily rf = family;
  if (r.family != family_name(family)) {
    if (family != KernelFamily::kSm90Gemm || r.family != family_name(KernelFamily::kSm80Gemm)) return std::nullopt;
    rf = KernelFamily::kSm80Gemm;
  }
  nlohmann::json j = nlohmann::json::parse(r.config_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  StatusOr<TileConfig> cfg = config_from_json(j);
  if (!cfg.ok() || !check_config(spec, arch, rf, *cfg).ok()) return std::nullopt;
  return std::make_pair(*cfg, rf);
}

std::vector<KernelSpec> tuning_kin(const KernelSpec& spec) {
  std::vector<KernelSpec> kin;
  if (spec.op == Op::kQuantize || !format_is_high_precision(spec.out.format)) return kin;
  KernelSpec base = spec;
  if (base.accumulate) {  // the same GEMM, its output overwritten instead of added to
    base.accumulate = false;
    kin.push_back(base);
  }
  if (!base.epilogue.empty() && base.gate_up == GateUp::kNone) {
    base.epilogue.clear();
    kin.push_back(base);
  }
  for (Format f : {Format::kBf16, Format::kF16, Format::kF32}) {
    if (f == base.out.format) continue;
    KernelSpec other = base;
    other.out.format = f;
    kin.push_back(other);
  }
  return kin;
}

TuningProblem tuning_problem(const KernelSpec& spec, const ProblemSizes& sizes) {
  KernelSpec stripped = spec;
  stripped.experts = 0;
  TuningProblem p;
  p.spec = print_spec(stripped);
  p.n = sizes.n;
  p.k = sizes.k;
  p.experts = spec.experts;
  return p;
}

StatusOr<KernelSpec> tuning_problem_spec(const TuningProblem& problem) {
  std::string text = problem.spec;
  if (problem.experts > 0) {
    const std::string stripped = "[experts=0,";
    const size_t at = text.find(stripped);
    if (at == std::string::npos)
      return InvalidArgument("tuning spec '" + problem.spec + "' has experts=" +
                             std::to_string(problem.experts) + " but no stripped [experts=0,...] header");
    text.replace(at, stripped.size(), "[experts=" + std::to_string(problem.experts) + ",");
  }
  return parse_spec(text);
}

StatusOr<TuningDevice> parse_tuning_device(std::string_view text, int nvrtc_major) {
  TuningDevice d;
  d.key.codegen_version = kCodegenVersion;
  d.key.nvrtc_major = nvrtc_major;
  bool named = false;
  for (const GpuInfo& g : known_gpus()) {
    if (text == g.id) {
      d.key.cc = g.cc;
      d.key.sm_count = g.sm_count;
      d.gpu_name = std::string(g.gpu_name);
      named = true;
    }
  }
  if (!named) {
    std::string_view rest = text;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        std::string ids;
        for (const GpuInfo& g : known_gpus()) ids += (ids.empty() ? "" : ", ") + std::string(g.id);
        return InvalidArgument("tuning device '" + std::string(text) + "': expected a GPU name (" + ids +
                               ") or cc=90,sms=132[,nvrtc=13][,name=...]");
      }
      const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
      if (key == "cc") {
        KILN_ASSIGN_OR_RETURN(d.key.cc, parse_int(key, value));
      } else if (key == "sms") {
        KILN_ASSIGN_OR_RETURN(d.key.sm_count, parse_int(key, value));
      } else if (key == "nvrtc") {
        KILN_ASSIGN_OR_RETURN(d.key.nvrtc_major, parse_int(key, value));
      } else if (key == "name") {
        d.gpu_name = std::string(value);
      } else {
        return InvalidArgument("tuning device '" + std::string(text) + "': unknown field '" +
                               std::string(key) + "' (expected cc, sms, nvrtc, name)");
      }
    }
    if (d.key.cc == 0 || d.key.sm_count == 0)
      return InvalidArgument("tuning device '" + std::string(text) + "': needs both cc= and sms=");
    if (d.gpu_name.empty()) {
      if (const GpuInfo* g = find_gpu(d.key.cc, d.key.sm_count)) d.gpu_name = std::string(g->gpu_name);
    }
  }
  if (d.key.nvrtc_major == 0) {
    KILN_ASSIGN_OR_RETURN(d.key.nvrtc_major, nvrtc_major_now());
  }
  return d;
}

StatusOr<TuningDevice> query_tuning_device(int ordinal) {
  KILN_ASSIGN_OR_RETURN(const Driver* drv, Driver::get());
  CUdevice dev;
  KILN_RETURN_IF_ERROR(drv->check(drv->cuDeviceGet(&dev, ordinal), "cuDeviceGet"));
  int major = 0, minor = 0, sms = 0;
  KILN_RETURN_IF_ERROR(
      drv->check(drv->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                 "cuDeviceGetAttribute"));
  KILN_RETURN_IF_ERROR(
      drv->check(drv->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                 "cuDeviceGetAttribute"));
  KILN_RETURN_IF_ERROR(
      drv->check(drv->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                 "cuDeviceGetAttribute"));
  char name[256] = {};
  KILN_RETURN_IF_ERROR(drv->check(drv->cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName"));
  TuningDevice d;
  d.key.cc = major * 10 + minor;
  d.key.sm_count = sms;
  d.key.codegen_version = kCodegenVersion;
  KILN_ASSIGN_OR_RETURN(d.key.nvrtc_major, nvrtc_major_now());
  d.gpu_name = name;
  d.driver = std::to_string(drv->version / 1000) + "." + std::to_string(drv->version % 1000 / 10);
  return d;
}

StatusOr<TuningDevice> tuning_device_for(const Arch& arch) {
  StatusOr<TuningDevice> d = NoDevice("no GPU");
  if (auto named = env::get(env::kTuningDevice)) {
    // Parsed on every call: cheap, and tests change it.
    d = parse_tuning_device(*named);
  } else {
    // One identity per ordinal per process: a driver query per plan is wasted work.
    static std::mutex mu;
    static std::map<int, StatusOr<TuningDevice>> by_ordinal;
    KILN_ASSIGN_OR_RETURN(const Driver* drv, Driver::get());
    int ordinal = 0;
    CUcontext cur = nullptr;
    if (drv->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != nullptr) {
      CUdevice dev;
      if (drv->cuCtxGetDevice(&dev) == CUDA_SUCCESS) ordinal = static_cast<int>(dev);
    }
    std::lock_guard<std::mutex> lock(mu);
    auto it = by_ordinal.find(ordinal);
    if (it == by_ordinal.end()) it = by_ordinal.emplace(ordinal, query_tuning_device(ordinal)).first;
    d = it->second;
  }
  if (!d.ok()) return d.status();
  if (d->key.cc != arch.sm())
    return Unsupported("tunings of " + d->key.to_string() + " do not apply to plans for " + arch.name());
  return d;
}

std::shared_ptr<TuningStore> shared_tuning_store(const std::string& cache_dir) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<TuningStore>> stores;
  std::lock_guard<std::mutex> lock(mu);
  auto it = stores.find(cache_dir);
  if (it != stores.end()) return it->second;
  TuningStore::Options o;
  o.dir = cache_dir;
  StatusOr<std::vector<TuningRecord>> pre = builtin_pretuned_records();
  if (pre.ok()) o.pretuned = *pre;  // a malformed built-in table is caught by the unit tier
  StatusOr<std::unique_ptr<TuningStore>> s = TuningStore::open(o);
  if (!s.ok()) {
    // kiln.db is unusable (a newer kiln's schema, a read-only directory): plan with what is left.
    o.dir.clear();
    s = TuningStore::open(o);
  }
  std::shared_ptr<TuningStore> store = s.ok() ? std::shared_ptr<TuningStore>(std::move(*s)) : nullptr;
  if (store) stores.emplace(cache_dir, store);
  return store;
}

std::shared_ptr<TuningStore> tuning_store_for(const Runtime& rt) {
  std::string dir = rt.cache_path();
  const size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? std::string() : dir.substr(0, slash);
  return shared_tuning_store(dir);
}

void StoreTunings::apply(const KernelSpec& spec, KernelFamily family, const ProblemSizes& sizes, const Arch& arch,
                         BucketChoices& buckets) {
  StatusOr<TuningDevice> device = tuning_device_for(arch);
  if (!device.ok()) return;  // no identity to key tunings by: the heuristic
  device_ = *device;
  std::shared_ptr<TuningStore> store = tuning_store_for(rt_);
  if (!store) return;
  // Puts the rows of problem p into the buckets that have none yet (the planner hands over heuristic
  // choices only), marked with their layer, or as borrowed.
  auto fill = [&](const TuningProblem& p, bool borrowed) {
    for (size_t b = 0; b < kTuningMBuckets.size(); ++b) {
      if (buckets[b].source != ConfigSource::kHeuristic) continue;
      StatusOr<std::optional<TuningHit>> hit = store->lookup(device->key, p, kTuningMBuckets[b]);
      if (!hit.ok() || !hit->has_value()) continue;  // a failing read is a miss: the cache is an optimisation
      if (auto cfg = usable_tuned_config((*hit)->record, spec, family, arch))
        buckets[b] = BucketChoice{cfg->first, cfg->second,
                                  borrowed ? ConfigSource::kBorrowed : source_of((*hit)->source)};
    }
  };
  const TuningProblem problem = tuning_problem(spec, sizes);
  fill(problem, false);
  // Buckets the spec itself has no row for take the row of a kindred spec (tuning_kin), after online
  // tuning has had its chance at the spec's own row.
  auto fill_from_kin = [&] {
    for (const KernelSpec& kin : tuning_kin(spec)) fill(tuning_problem(kin, sizes), true);
  };

  // The bucket the caller said it will run (sizes.m), or 0 when it gave no hint.
  const int64_t hint_bucket = sizes.m > 0 ? tuning_m_bucket(rows_per_expert(spec, sizes.m)) : 0;
  const size_t hint_index =
      hint_bucket == 0
          ? kTuningMBuckets.size()
          : static_cast<size_t>(std::find(kTuningMBuckets.begin(), kTuningMBuckets.end(), hint_bucket) -
                                kTuningMBuckets.begin());
  const bool hint_untuned = hint_index == kTuningMBuckets.size()
                                ? std::all_of(buckets.begin(), buckets.end(),
                                              [](const BucketChoice& c) { return c.source == ConfigSource::kHeuristic; })
                                : buckets[hint_index].source == ConfigSource::kHeuristic;
  if (!hint_untuned) return fill_from_kin();

  if (hint_index < kTuningMBuckets.size() && online_tuning_enabled() && !t_in_online_tuning) {
    auto installed = [] {
      OnlineState& st = online_state();
      std::lock_guard<std::mutex> lock(st.mu);
      return st.tuner;
    };
    OnlineTuner tuner = installed();
    // No tuner linked in (libkiln.so): the tuner module, loaded once (runtime/tuning_module.hpp).
    if (!tuner && load_tuning_module().ok()) tuner = installed();
    if (tuner) {
      OnlineTuneRequest req{spec, family, sizes, arch, *device};
      t_in_online_tuning = true;
      StatusOr<TuningRecord> won = tuner(rt_, req);
      t_in_online_tuning = false;
      if (won.ok()) {
        (void)store->record(*won);  // best effort: the plan uses the winner either way
        if (auto cfg = usable_tuned_config(*won, spec, family, arch)) {
          buckets[hint_index] = BucketChoice{cfg->first, cfg->second, ConfigSource::kOnline};
          return;
        }
      }
    }
  }
  if (env::flag(env::kRecordUntuned) && first_untuned_sighting(*device, problem, hint_bucket)) {
    (void)store->record_untuned(*device, problem, hint_bucket);  // best effort, like the kernel cache
  }
  fill_from_kin();
}

void set_online_tuner(OnlineTuner tuner) {
  OnlineState& st = online_state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.tuner = std::move(tuner);
}

void set_online_tuning(std::optional<bool> on) {
  OnlineState& st = online_state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.enabled = on;
}

bool online_tuning_enabled() {
  OnlineState& st = online_state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.enabled ? *st.enabled : env::flag(env::kAutotune);
}

}  // namespace kiln

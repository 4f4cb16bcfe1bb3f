// runtime/tuned_configs.hpp — how Runtime::plan fills a Plan's per-bucket configs from tunings.
//
// For each M bucket of a plan the config comes from the first layer that has one:
//   override (ScopedConfigOverride, the tuner timing a candidate) -> in-memory -> user database
//   (kiln.db, table `tunings`) -> pre-tuned tables built into the binary -> online tuning (opt-in,
//   the plan's M-hint bucket only) -> the heuristic (default_config).
// Tunings are keyed by the device's hard key (cc, SM count, codegen version, NVRTC major), so a
// plan only uses them when its arch is the device's; $KILN_TUNING_DEVICE names a device to plan for
// when there is none (pre-compiling on a CPU machine, tests). A stored config is parsed and checked
// again (config_from_json + check_config): a row the current planner rejects is ignored, never run.
// Nothing here fails a plan: an unreadable tuning store leaves the heuristic in place.
// The store is process-wide per cache directory, so every Runtime on one cache shares its memory
// layer; Plan::run never sees any of this (the configs are fixed when the plan is made).
//
//   kiln::ScopedConfigOverride pin(candidate);            // the tuner: this thread's plans use it
//   KILN_ASSIGN_OR_RETURN(kiln::Plan p, rt->plan(spec, sizes, arch));
//   TunedConfigs tc = kiln::resolve_tuned_configs(*rt, spec, family, sizes, arch);  // + where from
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/tuning_store.hpp"
#include "compiler/plan/gpus.hpp"
#include "compiler/plan/plan.hpp"

namespace kiln {

class Runtime;
class PlanImpl;

// The problem part of a tuning key: canonical spec text with sizes stripped (experts=0), N, K,
// experts. sizes.m is not part of it (that is the bucket).
TuningProblem tuning_problem(const KernelSpec& spec, const ProblemSizes& sizes);
// The spec back from a tuning problem (its experts put back into the stripped text).
StatusOr<KernelSpec> tuning_problem_spec(const TuningProblem& problem);

// The GPUs kiln knows by name are compiler/plan/gpus.hpp's table (known_gpus, find_gpu).

// "h200" (a known_gpus() id) or "cc=90,sms=132[,nvrtc=13][,name=...]". nvrtc_major 0: ask NVRTC.
StatusOr<TuningDevice> parse_tuning_device(std::string_view text, int nvrtc_major = 0);
// The identity of GPU `ordinal` (name, SMs, capability, driver) with this build's codegen version
// and NVRTC's major.
StatusOr<TuningDevice> query_tuning_device(int ordinal);
// The identity plans for arch are tuned for here: $KILN_TUNING_DEVICE when set, else the current
// GPU (the current context's device, else 0). UNSUPPORTED when that device is not arch; NO_DEVICE
// without a GPU.
StatusOr<TuningDevice> tuning_device_for(const Arch& arch);

// The store shared by this process for a cache directory ("": no user database). Opened on first
// use; if kiln.db cannot be opened the store still has memory and the pre-tuned tables.
std::shared_ptr<TuningStore> shared_tuning_store(const std::string& cache_dir);
// The store of rt's cache (rt.cache_path()'s directory; none when the cache is disabled).
std::shared_ptr<TuningStore> tuning_store_for(const Runtime& rt);

// A record's config and family, if a plan of `family` can run it: a config of that family, or of the
// portable family for a bucket of an sm90 plan (the portable family implements every spec the sm90
// family does; the tuner records such winners for grouped FP8 decode buckets: select_bucket_family).
// nullopt when the record does not parse or the current planner rejects it (check_config).
std::optional<std::pair<TileConfig, KernelFamily>> usable_tuned_config(const TuningRecord& r, const KernelSpec& spec,
                                                                       KernelFamily family, const Arch& arch);

enum class ConfigSource { kHeuristic, kOverride, kMemory, kUserDb, kPretuned, kOnline };
const char* config_source_name(ConfigSource s);  // "heuristic", "override", "memory", ...

struct TunedConfigs {
  std::array<TileConfig, kTuningMBuckets.size()> configs;
  std::array<ConfigSource, kTuningMBuckets.size()> sources{};
  // The family each bucket runs on: the plan's, or the portable family for a record (or an override)
  // that names it — a tuned grouped FP8 decode bucket of an sm90 plan (select_bucket_family).
  std::array<KernelFamily, kTuningMBuckets.size()> families{};
  std::optional<TuningDevice> device;  // the identity looked up under (none: heuristic only)
};
// Every bucket's config and where it came from, as Runtime::plan would choose them. May tune
// online (see set_online_tuning) and record untuned shapes (KILN_RECORD_UNTUNED=1).
TunedConfigs resolve_tuned_configs(Runtime& rt, const KernelSpec& spec, KernelFamily family,
                                   const ProblemSizes& sizes, const Arch& arch);
// Runtime::plan's hook: overwrites plan.configs with resolve_tuned_configs().
// Returns where each bucket's config came from (Runtime::plan keeps the heuristic's buckets open to the
// family choice of sm90_portable_bucket).
std::array<ConfigSource, kTuningMBuckets.size()> apply_tuned_configs(Runtime& rt, PlanImpl& plan);

// While alive, Runtime::plan on this thread uses cfg for every bucket and consults no tuning
// (how the tuner runs a candidate through a real Plan and run_check). Nests.
class ScopedConfigOverride {
 public:
  // family: the family the pinned config is for (the tuner timing a portable-family candidate of an
  // sm90 plan's bucket); by default the plan's own.
  explicit ScopedConfigOverride(const TileConfig& cfg, std::optional<KernelFamily> family = std::nullopt);
  ~ScopedConfigOverride();
  ScopedConfigOverride(const ScopedConfigOverride&) = delete;
  ScopedConfigOverride& operator=(const ScopedConfigOverride&) = delete;

 private:
  TileConfig cfg_;
  std::optional<KernelFamily> family_;
  const TileConfig* previous_;
  std::optional<KernelFamily> previous_family_;
};
const TileConfig* active_config_override();
std::optional<KernelFamily> active_family_override();

// ---- online tuning (opt-in) ----
// The tuner lives above the runtime, so it installs itself here (tuner/online.hpp:
// install_online_tuner). With online tuning enabled, a plan whose M-hint bucket has no tuning in
// any layer is tuned before plan() returns, and the winner is recorded in the user database.
struct OnlineTuneRequest {
  KernelSpec spec;
  KernelFamily family = KernelFamily::kSm80Gemm;
  ProblemSizes sizes;  // the plan's (m: its hint, whose bucket is tuned)
  Arch arch;
  TuningDevice device;
};
using OnlineTuner = std::function<StatusOr<TuningRecord>(Runtime& rt, const OnlineTuneRequest& request)>;
void set_online_tuner(OnlineTuner tuner);  // an empty function uninstalls
// On when set_online_tuning(true) was called (the API flag) or KILN_AUTOTUNE=1; the API wins.
void set_online_tuning(std::optional<bool> on);
bool online_tuning_enabled();

}  // namespace kiln

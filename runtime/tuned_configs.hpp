// runtime/tuned_configs.hpp — the runtime's tunings, which Runtime::plan hands to the planner.
//
// For each M bucket of a plan the config comes from the first layer that has one:
//   a pinned config (PlanOptions::config: `kiln run --config`, the tuner timing a candidate) -> in-memory
//   -> user database (kiln.db, table `tunings`) -> pre-tuned tables built into the binary -> online
//   tuning (opt-in, the plan's M-hint bucket only) -> the heuristic (default_config).
// The planner (compiler/plan/planner.hpp) owns that order; this file supplies the tunings' layers as a
// TunedConfigSource (StoreTunings).
// Tunings are keyed by the device's hard key (cc, SM count, codegen version, NVRTC major), so a
// plan only uses them when its arch is the device's; $KILN_TUNING_DEVICE names a device to plan for
// when there is none (pre-compiling on a CPU machine, tests). A stored config is parsed and checked
// again (config_from_json + check_config): a row the current planner rejects is ignored, never run.
// Nothing here fails a plan: an unreadable tuning store leaves the heuristic in place.
// The store is process-wide per cache directory, so every Runtime on one cache shares its memory
// layer; Plan::run never sees any of this (the configs are fixed when the plan is made).
//
//   kiln::StoreTunings tunings(*rt);
//   KILN_ASSIGN_OR_RETURN(kiln::PlanRecord p, kiln::make_plan(spec, sizes, arch, {}, &tunings));
//   tunings.apply(spec, family, sizes, arch, buckets);   // buckets the tunings know, with their source
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
#include "compiler/plan/planner.hpp"  // TunedConfigSource, BucketChoices

namespace kiln {

class Runtime;

// Specs whose tuned rows a spec without its own row borrows, nearest first: the same GEMM overwriting its
// output instead of accumulating into it, without its epilogue (when it has no gate|up: a per-column bias
// or scale changes the stores, not the mainloop), then
// with each other 16- or 32-bit output format (a training layer's forward with a bias, a wgrad writing bf16
// instead of f32). A borrowed row still passes check_config for the spec itself before it is used.
std::vector<KernelSpec> tuning_kin(const KernelSpec& spec);
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

// The runtime's tunings as compiler/plan's TunedConfigSource (Runtime::plan hands one to make_plan):
// per bucket, memory -> user database -> pre-tuned tables, then (opt-in) online tuning of the M-hint
// bucket, and KILN_RECORD_UNTUNED's sightings. Sources are ConfigSource (compiler/plan/planner.hpp).
class StoreTunings final : public TunedConfigSource {
 public:
  explicit StoreTunings(Runtime& rt) : rt_(rt) {}
  void apply(const KernelSpec& spec, KernelFamily family, const ProblemSizes& sizes, const Arch& arch,
             BucketChoices& buckets) override;
  // The identity tunings were looked up under (none: the heuristic alone).
  const std::optional<TuningDevice>& device() const { return device_; }

 private:
  Runtime& rt_;
  std::optional<TuningDevice> device_;
};

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
// The same as a plain function (what the tuner module hands over: runtime/tuning_module.hpp).
using OnlineTuneFn = StatusOr<TuningRecord> (*)(Runtime& rt, const OnlineTuneRequest& request);
void set_online_tuner(OnlineTuner tuner);  // an empty function uninstalls
// On when set_online_tuning(true) was called (the API flag) or KILN_AUTOTUNE=1; the API wins.
void set_online_tuning(std::optional<bool> on);
bool online_tuning_enabled();

}  // namespace kiln

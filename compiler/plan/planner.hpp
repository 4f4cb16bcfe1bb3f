// compiler/plan/planner.hpp — the whole plan of a spec on an arch, made in one place.
//
// make_plan is everything Runtime::plan decides, as data the runtime then only loads and launches:
//   1. the spec is validated and its epilogue parsed (once) and lowered; can_implement for the sizes;
//   2. every M bucket gets the heuristic's config (default_config), then either the caller's pinned
//      config (PlanOptions::config) or what the tunings know (a TunedConfigSource the runtime supplies:
//      memory -> user database -> pre-tuned tables -> online tuning, runtime/tuned_configs.hpp);
//   3. heuristic buckets that measured faster on the portable family move there (grouped FP8 at a few
//      rows per expert: sm90_portable_bucket; dense decode: decode_bucket);
//   4. MXFP8 plans on sm_90a get their bf16 pre-pass plan (the same problem on bf16 operands, planned by
//      the same rules) with the conversion kernel's spec, launch rule and workspace layout; quantized dgrad
//      plans get the workspace layout and grid of W's transpose;
//   5. every bucket records its launch rule (grid, split-K slots, workspace) as a function of M.
// Nothing here touches a GPU, the cache or the tuning store: the planner is pure host code, testable
// with a fake arch (tests/unit/compiler/planner_test.cpp).
//
//   KILN_ASSIGN_OR_RETURN(kiln::PlanRecord p, kiln::make_plan(spec, {0, 7168, 2048}, arch, {}, &tunings));
//   p.configs[kiln::bucket_index(64)];   // the config run() uses for 64 rows
//   p.launch[kiln::bucket_index(64)].shape(64);
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/plan/launch_rule.hpp"
#include "compiler/plan/plan.hpp"

namespace kiln {

// Where a bucket's config came from.
// kBorrowed: a tuned row of a kindred spec (the same GEMM without its epilogue, or with another output
// format; runtime/tuned_configs.hpp, tuning_kin) for a spec with no row of its own.
enum class ConfigSource { kHeuristic, kOverride, kMemory, kUserDb, kPretuned, kOnline, kBorrowed };
const char* config_source_name(ConfigSource s);  // "heuristic", "override", "memory", ...

struct BucketChoice {
  TileConfig config;
  KernelFamily family = KernelFamily::kSm80Gemm;
  ConfigSource source = ConfigSource::kHeuristic;
};
using BucketChoices = std::array<BucketChoice, kMBuckets.size()>;

// Tuned configs, supplied by whoever keeps them (the runtime's tuning store). apply() replaces the
// choices of the buckets it has a tuning for and marks their source; it leaves the others as they are.
// A config it puts must pass check_config for the family it names (the plan's family, or the portable
// family for a bucket of an sm90 plan). It never fails a plan: an unreadable store changes nothing.
class TunedConfigSource {
 public:
  virtual ~TunedConfigSource() = default;
  virtual void apply(const KernelSpec& spec, KernelFamily family, const ProblemSizes& sizes, const Arch& arch,
                     BucketChoices& buckets) = 0;
};

// A made plan: what run() needs, and nothing that needs a GPU.
struct PlanRecord {
  KernelSpec spec;
  std::string canonical;  // print_spec(spec)
  ProblemSizes sizes;     // m: the caller's hint (0: any M)
  Arch arch;              // with the facts the plan counted with (SMs, shared memory, ...)
  KernelFamily family = KernelFamily::kSm80Gemm;
  std::array<TileConfig, kMBuckets.size()> configs;
  // The family of each bucket's kernel: `family`, except the buckets of an sm90 plan that run on the
  // portable family (step 3 above, or a tuning or pinned config that names it).
  std::array<KernelFamily, kMBuckets.size()> families{};
  std::array<ConfigSource, kMBuckets.size()> sources{};
  // Each bucket's launch as a function of M: run() evaluates these and never calls back into planning.
  std::array<LaunchRule, kMBuckets.size()> launch;
  // The spec's epilogue, parsed once and lowered (nullopt without one): its vector operands in slot order
  // for run()'s operand checks, and the program every bucket's kernel is emitted with.
  std::optional<EpilogueProgram> epilogue;
  // MXFP8 at large M: the bf16 plan of the same problem, the conversion kernel's spec and launch rule,
  // and the workspace layout (null / empty where the plan has no pre-pass).
  std::shared_ptr<const PlanRecord> prepass_plan;
  KernelSpec prepass_convert_spec;
  LaunchRule prepass_convert_launch;
  MxPrepassLayout prepass_layout;
  // Quantized dgrad (compiler/plan/gemm_view.hpp dgrad_reads_transposed_w): where W's transposed copy lies
  // in the workspace and the grid of its transpose (kernels/fp8_transpose.cuh, spec = this spec); experts 0
  // where the plan has none.
  TransposedWLayout transposed_w;

  const EpilogueProgram* epilogue_program() const { return epilogue ? &*epilogue : nullptr; }
};

// The plan of spec for sizes on arch (arch with its facts: Runtime::plan fills them from the device or
// the named part). options.arch is ignored here (the caller resolved it). tunings: null for the heuristic
// alone; not consulted when options.config pins every bucket. Errors: validate_spec's and can_implement's;
// INVALID_ARGUMENT naming the config, family and arch for a pinned config the family refuses.
StatusOr<PlanRecord> make_plan(const KernelSpec& spec, const ProblemSizes& sizes, const Arch& arch,
                               const PlanOptions& options, TunedConfigSource* tunings);

}  // namespace kiln

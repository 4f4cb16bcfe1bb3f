// make_plan (planner.hpp): one spec on one arch, every M bucket's family, config and launch rule.
#include "compiler/plan/planner.hpp"

#include <utility>

#include "compiler/plan/gemm_view.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {

const char* config_source_name(ConfigSource s) {
  switch (s) {
    case ConfigSource::kHeuristic: return "heuristic";
    case ConfigSource::kOverride: return "override";
    case ConfigSource::kMemory: return "memory";
    case ConfigSource::kUserDb: return "user database";
    case ConfigSource::kPretuned: return "pre-tuned";
    case ConfigSource::kOnline: return "online tuning";
    case ConfigSource::kBorrowed: return "borrowed tuning";
  }
  return "unknown";
}

namespace {

// Steps 2 and 3 of planner.hpp: every bucket's config and family.
StatusOr<BucketChoices> choose_buckets(const KernelSpec& spec, const ProblemSizes& sizes, const Arch& arch,
                                       KernelFamily family, const PlanOptions& options, TunedConfigSource* tunings) {
  BucketChoices buckets;
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    ProblemSizes s = sizes;
    s.m = kMBuckets[b];
    buckets[b] = BucketChoice{default_config(spec, arch, s), family, ConfigSource::kHeuristic};
  }
  if (options.config) {
    const TileConfig& pinned = *options.config;
    // A decode config names the portable family's decode kernel whichever family the plan picked.
    const KernelFamily pinned_family =
        options.family.value_or(pinned.decode != 0 ? KernelFamily::kSm80Gemm : family);
    if (Status ok = check_config(spec, arch, pinned_family, pinned); !ok.ok())
      return InvalidArgument("config " + pinned.to_string() + " for " + family_name(pinned_family) + " on " +
                             arch.name() + ": " + ok.message());
    for (BucketChoice& c : buckets) c = BucketChoice{pinned, pinned_family, ConfigSource::kOverride};
    return buckets;
  }
  if (tunings != nullptr) tunings->apply(spec, family, sizes, arch, buckets);
  // Heuristic buckets that measured faster on the portable family run there: grouped FP8 at a few rows per
  // expert (sm90_portable_bucket) and dense problems of at most 16 rows that the decode kernel takes
  // (decode_bucket; faster than the sm90 family on every decode shape measured on the H200,
  // docs/performance.md). Tuned buckets run on the family their record names.
  if (family == KernelFamily::kSm90Gemm) {
    for (size_t b = 0; b < kMBuckets.size(); ++b) {
      if (buckets[b].source != ConfigSource::kHeuristic) continue;
      if (!sm90_portable_bucket(spec, kMBuckets[b]) && !decode_bucket(spec, arch, kMBuckets[b])) continue;
      ProblemSizes s = sizes;
      s.m = kMBuckets[b];
      const TileConfig portable = default_config(spec, arch, KernelFamily::kSm80Gemm, s);
      if (!check_config(spec, arch, KernelFamily::kSm80Gemm, portable).ok()) continue;
      buckets[b].family = KernelFamily::kSm80Gemm;
      buckets[b].config = portable;
    }
  }
  return buckets;
}

}  // namespace

StatusOr<PlanRecord> make_plan(const KernelSpec& spec, const ProblemSizes& sizes, const Arch& arch,
                               const PlanOptions& options, TunedConfigSource* tunings) {
  // ---- 1. The spec (its epilogue parsed here, once), the family, the sizes.
  std::optional<Epilogue> parsed;
  KILN_RETURN_IF_ERROR(validate_spec(spec, parsed));
  KILN_ASSIGN_OR_RETURN(KernelFamily family, select_family(spec, arch));
  // sizes.m is a hint (0: any M); every family's can_implement takes M = 0, and rules on M (e.g.
  // quantize transpose=true) are checked again per call.
  KILN_RETURN_IF_ERROR(can_implement_valid_spec(spec, arch, sizes));
  PlanRecord p;
  p.spec = spec;
  p.canonical = print_spec(spec);
  p.sizes = sizes;
  p.arch = arch;
  p.family = family;
  if (parsed) {
    KILN_ASSIGN_OR_RETURN(EpilogueProgram program, spec_epilogue_program(*parsed));
    p.epilogue = std::move(program);
  }
  // ---- 2, 3. Every bucket's config and family.
  KILN_ASSIGN_OR_RETURN(BucketChoices buckets, choose_buckets(spec, sizes, arch, family, options, tunings));
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    p.configs[b] = buckets[b].config;
    p.families[b] = buckets[b].family;
    p.sources[b] = buckets[b].source;
  }
  // ---- 4. MXFP8 at large M: the bf16 pre-pass's plan, by the same rules (tunings included; a pinned
  // config is for this spec's kernels, not the bf16 ones). A bf16 plan that cannot be made (e.g. an output
  // format the bf16 kernel lacks) leaves the fused kernel alone.
  if (sm90_mx_prepass_supported(spec, arch)) {
    StatusOr<PlanRecord> bf16 = make_plan(sm90_mx_prepass_gemm_spec(spec), sizes, arch, PlanOptions{}, tunings);
    if (bf16.ok()) {
      p.prepass_plan = std::make_shared<const PlanRecord>(std::move(*bf16));
      p.prepass_convert_spec = sm90_mx_prepass_convert_spec(spec);
      p.prepass_convert_launch = make_launch_rule(spec, KernelFamily::kMxDequant, TileConfig{}, sizes.n, sizes.k);
      p.prepass_layout = make_mx_prepass_layout(spec, sizes.n, sizes.k);
    }
  }
  // Quantized dgrad: W's transposed copy, written before every run's GEMM (runtime/dgrad_transpose.hpp).
  p.transposed_w = make_transposed_w_layout(spec, sizes.n, sizes.k);
  // ---- 5. Every bucket's launch rule, from its final family and config.
  for (size_t b = 0; b < kMBuckets.size(); ++b)
    p.launch[b] = make_launch_rule(spec, p.families[b], p.configs[b], sizes.n, sizes.k);
  return p;
}

}  // namespace kiln

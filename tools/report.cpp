// `kiln` CLI: the runtime, the compile report (text and JSON) and error reporting, shared by the
// subcommands.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/spec/spec.hpp"
#include "runtime/tuned_configs.hpp"
#include "tools/cli.hpp"

namespace kiln::cli {
namespace {

// ptxas reports -1 for "not reported"; show that as n/a rather than a negative count.
std::string count_or_na(int v, const char* unit) {
  if (v < 0) return "n/a";
  return fmt::format("{}{}", v, unit);
}

nlohmann::json int_or_null(int v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

}  // namespace

StatusOr<std::shared_ptr<Runtime>> make_runtime(const GlobalOptions& global) {
  RuntimeOptions ro;
  ro.cache_dir = global.cache_dir;
  ro.disable_cache = global.no_cache;
  return Runtime::create(ro);
}

StatusOr<Arch> default_arch(Runtime& rt, std::string* source) {
  StatusOr<Arch> dev = rt.device_arch();
  if (dev.ok()) {
    *source = "device";
    return dev;
  }
  *source = "default: no GPU";
  return parse_arch("sm_90a");
}

StatusOr<Plan> plan_with_config(Runtime& rt, const KernelSpec& spec, const ProblemSizes& sizes,
                                std::optional<Arch> arch, const std::string& config) {
  PlanOptions options;
  options.arch = std::move(arch);
  if (config.empty()) return rt.plan(spec, sizes, options);
  StatusOr<TileConfig> cfg = InvalidArgument("unset");
  if (config.front() == '{') {
    const nlohmann::json j = nlohmann::json::parse(config, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return InvalidArgument("--config '" + config + "' is not valid JSON");
    cfg = config_from_json(j);
  } else {
    cfg = config_from_name(config);
  }
  if (!cfg.ok()) return InvalidArgument("--config: " + cfg.status().message());
  // Every M bucket takes cfg (a decode config: the portable family's decode kernel); the planner
  // refuses a config the family does not take, naming config, family and arch.
  options.config = *cfg;
  return rt.plan(spec, sizes, options);
}

StatusOr<CompileReport> compile_plan(Runtime& rt, const Plan& plan, const ProblemSizes& sizes,
                                     std::string arch_source, bool want_ptx) {
  CompileReport r;
  r.spec = print_spec(plan.spec());
  r.sizes = sizes;
  r.arch = plan.arch().name();
  r.arch_source = std::move(arch_source);
  // run() buckets a grouped problem by its rows per expert (rows_per_expert; the CLI's masked --m is
  // already rows per expert).
  const KernelSpec& spec = plan.spec();
  const int64_t rows = spec.layout == GroupLayout::kMasked ? sizes.m : rows_per_expert(spec, sizes.m);
  r.family = family_name(plan.family_for(rows));
  r.config = plan.config_for(rows);
  KILN_ASSIGN_OR_RETURN(r.kernel, rt.compile(spec, plan.family_for(rows), r.config, plan.arch(), want_ptx));
  r.cache_path = rt.cache_path();
  return r;
}

std::string format_compile_report(const CompileReport& r) {
  const CompiledKernel& k = r.kernel;
  std::string out;
  auto row = [&out](const char* name, const std::string& value) {
    out += fmt::format("  {:<10} {}\n", name, value);
  };
  row("spec", r.spec);
  row("problem", fmt::format("M={} N={} K={}", r.sizes.m, r.sizes.n, r.sizes.k));
  row("arch", fmt::format("{} ({})", r.arch, r.arch_source));
  row("family", r.family);
  // The launched block (sm90: a producer warpgroup beside the consumers' warps), else the config's warps.
  const int threads = r.kernel.threads > 0 ? r.kernel.threads : r.config.threads();
  row("config", fmt::format("{} ({} threads)", r.config.to_string(), threads));
  row("kernel", k.entry.empty() ? "n/a" : k.entry);
  row("registers", count_or_na(k.registers, " per thread"));
  row("smem", fmt::format("{} static + {} dynamic", count_or_na(k.smem_static, " B"),
                          count_or_na(k.smem_dynamic, " B")));
  row("spills", fmt::format("{} stores, {} loads, stack frame {}", count_or_na(k.spill_stores, " B"),
                            count_or_na(k.spill_loads, " B"), count_or_na(k.stack_frame, " B")));
  // ptxas's performance notes (e.g. wgmma serialization, C7512 / C7513): only a compile has its log.
  if (k.from_cache) {
    row("ptxas", "n/a (cache hit: --no-cache recompiles and shows ptxas's performance notes)");
  } else if (!has_ptxas_report(k.log)) {
    row("ptxas",
        "n/a (NVRTC returned no ptxas report: it served this program from its own cache; registers and "
        "stack frame come from the cubin)");
  } else {
    const std::vector<std::string> notes = ptxas_performance_notes(k.log);
    if (notes.empty()) row("ptxas", "no performance notes");
    for (const std::string& n : notes) row("ptxas", n);
  }
  row("compile", k.from_cache ? fmt::format("cache hit (compiled in {:.1f} ms originally)", k.compile_ms)
                              : fmt::format("{:.1f} ms (cache miss)", k.compile_ms));
  row("cubin", fmt::format("{} bytes", k.cubin.size()));
  row("key", k.key.empty() ? "n/a" : k.key);
  row("cache", r.cache_path.empty() ? "disabled" : r.cache_path);
  return out;
}

nlohmann::json compile_report_json(const CompileReport& r) {
  const CompiledKernel& k = r.kernel;
  nlohmann::json j;
  j["spec"] = r.spec;
  j["sizes"] = {{"m", r.sizes.m}, {"n", r.sizes.n}, {"k", r.sizes.k}};
  j["arch"] = r.arch;
  j["arch_source"] = r.arch_source;
  j["family"] = r.family;
  j["config"] = config_to_json(r.config);
  j["config_name"] = r.config.to_string();
  j["threads"] = r.kernel.threads > 0 ? r.kernel.threads : r.config.threads();
  j["entry"] = k.entry;
  j["registers"] = int_or_null(k.registers);
  j["smem_static"] = int_or_null(k.smem_static);
  j["smem_dynamic"] = int_or_null(k.smem_dynamic);
  j["stack_frame"] = int_or_null(k.stack_frame);
  j["spill_stores"] = int_or_null(k.spill_stores);
  j["spill_loads"] = int_or_null(k.spill_loads);
  j["ptxas_notes"] = k.from_cache || !has_ptxas_report(k.log)
                         ? nlohmann::json(nullptr)
                         : nlohmann::json(ptxas_performance_notes(k.log));
  j["compile_ms"] = k.compile_ms;
  j["from_cache"] = k.from_cache;
  j["cubin_bytes"] = k.cubin.size();
  j["key"] = k.key;
  j["cache_path"] = r.cache_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.cache_path);
  return j;
}

int exit_code_for(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kNoDevice: return kExitNoGpu;
    default: return kExitError;
  }
}

int report_error(const char* command, const Status& s) {
  fmt::print(stderr, "kiln {}: {}\n", command, s.to_string());
  return exit_code_for(s);
}

nlohmann::json parse_json_or_string(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return nlohmann::json(text);
  return j;
}

}  // namespace kiln::cli

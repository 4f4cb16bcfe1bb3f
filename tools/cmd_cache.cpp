// `kiln cache stats|list|clear`: inspect or empty the SQLite kernel cache (--cache-dir, else the
// default location). `kiln cache tunings|export|import`: list the tuning winners, or move them
// between machines as JSON (the format of tuner/pretuned/*.json; cache/tuning_store.hpp).
#include <fmt/format.h>

#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cache/kernel_cache.hpp"
#include "cache/tuning_store.hpp"
#include "runtime/tuned_configs.hpp"
#include "tools/cli.hpp"

namespace kiln::cli {
namespace {

enum class CacheAction { kStats, kList, kClear, kTunings, kExport, kImport };

struct CacheArgs {
  bool json = false;
  std::string file;  // export / import: a path, or - for stdout / stdin
  std::string gpu;   // export / tunings: only this device's hard key ("h200", "cc=90,sms=132")
};

StatusOr<std::unique_ptr<KernelCache>> open_cache(const GlobalOptions& global) {
  if (!global.cache_dir.empty()) return KernelCache::open(global.cache_dir);
  return KernelCache::open_default();
}

std::string human_bytes(int64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < int64_t{1024} * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
}

std::string utc_time(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "-";
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json stats_json(const CacheStats& s) {
  return {{"path", s.path},
          {"kernels", s.kernels},
          {"cubin_bytes", s.cubin_bytes},
          {"max_cubin_bytes", s.max_cubin_bytes},
          {"file_bytes", s.file_bytes},
          {"schema_version", s.user_version},
          {"journal_mode", s.journal_mode}};
}

int cache_stats(KernelCache& cache, const CacheArgs& args) {
  StatusOr<CacheStats> s = cache.stats();
  if (!s.ok()) return report_error("cache stats", s.status());
  if (args.json) {
    fmt::print("{}\n", stats_json(*s).dump(2));
    return kExitOk;
  }
  fmt::print("kiln cache\n");
  fmt::print("  {:<10} {}\n", "path", s->path);
  fmt::print("  {:<10} {}\n", "kernels", s->kernels);
  fmt::print("  {:<10} {} ({} B)\n", "cubins", human_bytes(s->cubin_bytes), s->cubin_bytes);
  if (s->max_cubin_bytes > 0) {
    fmt::print("  {:<10} {} (KILN_CACHE_MAX_MB; least recently used kernels evicted past it)\n", "cap",
               human_bytes(s->max_cubin_bytes));
  } else {
    fmt::print("  {:<10} none (KILN_CACHE_MAX_MB=0)\n", "cap");
  }
  fmt::print("  {:<10} {} ({} B)\n", "file", human_bytes(s->file_bytes), s->file_bytes);
  fmt::print("  {:<10} {}\n", "schema", s->user_version);
  fmt::print("  {:<10} {}\n", "journal", s->journal_mode);
  return kExitOk;
}

int cache_list(KernelCache& cache, const CacheArgs& args) {
  StatusOr<std::vector<CompiledKernel>> rows = cache.list(/*with_cubins=*/false);
  if (!rows.ok()) return report_error("cache list", rows.status());
  if (args.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const CompiledKernel& k : *rows) {
      j.push_back({{"key", k.key},
                   {"arch", k.arch},
                   {"entry", k.entry},
                   {"spec", k.spec},
                   {"config", k.config},
                   {"registers", k.registers},
                   {"smem", k.smem_static},
                   {"spills", k.spill_stores},  // the stored spills: the larger of stores and loads
                   {"compile_ms", k.compile_ms},
                   {"created_unix", k.created_unix},
                   {"last_used_unix", k.last_used_unix}});
    }
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  if (rows->empty()) {
    fmt::print("kiln cache: no kernels in {}\n", cache.path());
    return kExitOk;
  }
  fmt::print("{:<12}  {:<7}  {:>4}  {:>7}  {:>6}  {:>9}  {:<20}  {:<28}  {}\n", "key", "arch", "regs", "smem",
             "spills", "compile", "last used", "config", "spec");
  for (const CompiledKernel& k : *rows) {
    fmt::print("{:<12}  {:<7}  {:>4}  {:>7}  {:>6}  {:>7.0f}ms  {:<20}  {:<28}  {}\n", k.key.substr(0, 12),
               k.arch, k.registers, k.smem_static, k.spill_stores, k.compile_ms, utc_time(k.last_used_unix),
               k.config, k.spec);
  }
  fmt::print("{} kernel(s) in {}\n", rows->size(), cache.path());
  return kExitOk;
}

int cache_clear(KernelCache& cache, const CacheArgs& args) {
  StatusOr<CacheStats> before = cache.stats();
  if (!before.ok()) return report_error("cache clear", before.status());
  Status s = cache.clear();
  if (!s.ok()) return report_error("cache clear", s);
  if (args.json) {
    fmt::print("{}\n", nlohmann::json{{"path", cache.path()}, {"removed_kernels", before->kernels}}.dump(2));
  } else {
    fmt::print("kiln cache: removed {} kernel(s) ({}) from {}\n", before->kernels,
               human_bytes(before->cubin_bytes), cache.path());
  }
  return kExitOk;
}

// ---- tunings (cache/tuning_store.hpp) ----

StatusOr<std::unique_ptr<TuningStore>> open_tunings(const GlobalOptions& global) {
  TuningStore::Options o;
  o.dir = global.cache_dir.empty() ? KernelCache::default_dir() : global.cache_dir;
  return TuningStore::open(o);
}

// The user database's tunings, only those of --gpu's hard key (cc and SM count) when given.
StatusOr<std::vector<TuningRecord>> selected_tunings(TuningStore& store, const CacheArgs& args) {
  KILN_ASSIGN_OR_RETURN(std::vector<TuningRecord> rows, store.list());
  if (args.gpu.empty()) return rows;
  // The filter names a device; the NVRTC major and codegen version of the rows are kept as they are.
  KILN_ASSIGN_OR_RETURN(TuningDevice want, parse_tuning_device(args.gpu, /*nvrtc_major=*/1));
  std::vector<TuningRecord> out;
  for (TuningRecord& r : rows) {
    if (r.device.key.cc == want.key.cc && r.device.key.sm_count == want.key.sm_count)
      out.push_back(std::move(r));
  }
  return out;
}

int cache_tunings(TuningStore& store, const CacheArgs& args) {
  StatusOr<std::vector<TuningRecord>> rows = selected_tunings(store, args);
  if (!rows.ok()) return report_error("cache tunings", rows.status());
  if (args.json) {
    fmt::print("{}\n", tunings_to_json(*rows).dump(2));
    return kExitOk;
  }
  if (rows->empty()) {
    fmt::print("kiln cache: no tunings in {}\n", store.path());
    return kExitOk;
  }
  fmt::print("{:<26}  {:>6}  {:>6}  {:>3}  {:>6}  {:<30}  {:>10}  {:>5}  {:<20}  {}\n", "device", "n", "k",
             "E", "bucket", "config", "median us", "tried", "tuned", "spec");
  for (const TuningRecord& r : *rows) {
    std::string cfg = r.config_json;
    nlohmann::json j = nlohmann::json::parse(r.config_json, nullptr, false);
    if (!j.is_discarded()) {
      StatusOr<TileConfig> c = config_from_json(j);
      if (c.ok()) cfg = c->to_string();
    }
    fmt::print("{:<26}  {:>6}  {:>6}  {:>3}  {:>6}  {:<30}  {:>10.2f}  {:>5}  {:<20}  {}\n",
               r.device.key.to_string(), r.problem.n, r.problem.k, r.problem.experts, r.m_bucket, cfg,
               r.median_us, r.candidates, utc_time(r.tuned_unix), r.problem.spec);
  }
  fmt::print("{} tuning(s) in {}\n", rows->size(), store.path());
  return kExitOk;
}

int cache_export(TuningStore& store, const CacheArgs& args) {
  StatusOr<std::vector<TuningRecord>> rows = selected_tunings(store, args);
  if (!rows.ok()) return report_error("cache export", rows.status());
  nlohmann::json j = tunings_to_json(*rows);
  j["generated_by"] = "kiln cache export" + (args.gpu.empty() ? std::string() : " --gpu " + args.gpu);
  const std::string text = j.dump(2) + "\n";
  if (args.file == "-") {
    fmt::print("{}", text);
    return kExitOk;
  }
  std::ofstream f(args.file, std::ios::binary | std::ios::trunc);
  if (!f) return report_error("cache export", InvalidArgument("cannot open '" + args.file + "' for writing"));
  f << text;
  f.close();
  if (!f) return report_error("cache export", Internal("writing '" + args.file + "' failed"));
  fmt::print(stderr, "kiln cache: exported {} tuning(s) from {} to {}\n", rows->size(), store.path(),
             args.file);
  return kExitOk;
}

int cache_import(TuningStore& store, const CacheArgs& args) {
  std::string text;
  if (args.file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream f(args.file, std::ios::binary);
    if (!f)
      return report_error("cache import", InvalidArgument("cannot open '" + args.file + "' for reading"));
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  // All or nothing: a file with one bad record imports nothing.
  StatusOr<std::vector<TuningRecord>> recs =
      tunings_from_json_text(text, args.file == "-" ? "<stdin>" : args.file);
  if (!recs.ok()) return report_error("cache import", recs.status());
  int stored = 0, kept = 0;
  for (const TuningRecord& r : *recs) {
    StatusOr<bool> s = store.record(r);
    if (!s.ok()) return report_error("cache import", s.status());
    (*s ? stored : kept) += 1;
  }
  if (args.json) {
    fmt::print(
        "{}\n",
        nlohmann::json{
            {"path", store.path()}, {"records", recs->size()}, {"stored", stored}, {"kept_existing", kept}}
            .dump(2));
  } else {
    fmt::print(
        "kiln cache: imported {} tuning(s) into {}: {} new or faster, {} kept (the stored one is as fast or "
        "faster)\n",
        recs->size(), store.path(), stored, kept);
  }
  return kExitOk;
}

int run_cache(CacheAction action, const CacheArgs& args, const GlobalOptions& global) {
  if (action == CacheAction::kTunings || action == CacheAction::kExport || action == CacheAction::kImport) {
    if (global.no_cache)
      return report_error("cache", InvalidArgument("--no-cache: there is no database to use"));
    StatusOr<std::unique_ptr<TuningStore>> store = open_tunings(global);
    if (!store.ok()) return report_error("cache", store.status());
    if (action == CacheAction::kTunings) return cache_tunings(**store, args);
    if (action == CacheAction::kExport) return cache_export(**store, args);
    return cache_import(**store, args);
  }
  StatusOr<std::unique_ptr<KernelCache>> cache = open_cache(global);
  if (!cache.ok()) return report_error("cache", cache.status());
  switch (action) {
    case CacheAction::kStats: return cache_stats(**cache, args);
    case CacheAction::kList: return cache_list(**cache, args);
    case CacheAction::kClear: return cache_clear(**cache, args);
    default: break;
  }
  return kExitError;
}

}  // namespace

Command register_cache(CLI::App& app, const GlobalOptions& global) {
  auto args = std::make_shared<CacheArgs>();
  CLI::App* cmd =
      app.add_subcommand("cache",
                         "Inspect or empty the kernel cache, list or move tunings (--cache-dir, else "
                         "$KILN_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/kiln).");
  cmd->fallthrough();
  cmd->require_subcommand(1);
  struct Sub {
    const char* name;
    const char* help;
    CacheAction action;
  };
  const Sub subs[] = {
      {"stats", "path, kernel count, sizes, schema version, journal mode", CacheAction::kStats},
      {"list", "one line per cached kernel (key, arch, resources, config, spec)", CacheAction::kList},
      {"clear", "remove every cached kernel", CacheAction::kClear},
  };
  auto chosen = std::make_shared<CacheAction>(CacheAction::kStats);
  for (const Sub& s : subs) {
    CLI::App* sub = cmd->add_subcommand(s.name, s.help);
    sub->fallthrough();
    sub->add_flag("--json", args->json, "print JSON");
    CacheAction action = s.action;
    sub->parse_complete_callback([chosen, action]() { *chosen = action; });
  }
  // Tunings: list, and move between machines (the JSON format of tuner/pretuned/*.json).
  const char* kGpuHelp = "only tunings of this GPU (a name such as h200, or cc=90,sms=132)";
  CLI::App* tunings =
      cmd->add_subcommand("tunings", "one line per tuning winner (device, shape, bucket, config, time)");
  tunings->fallthrough();
  tunings->add_flag("--json", args->json, "print JSON (the export format)");
  tunings->add_option("--gpu", args->gpu, kGpuHelp);
  tunings->parse_complete_callback([chosen]() { *chosen = CacheAction::kTunings; });
  CLI::App* exp = cmd->add_subcommand("export", "write the tuning winners to FILE as JSON (- for stdout)");
  exp->fallthrough();
  exp->add_option("file", args->file, "output file, or - for stdout")->required();
  exp->add_option("--gpu", args->gpu, kGpuHelp);
  exp->parse_complete_callback([chosen]() { *chosen = CacheAction::kExport; });
  CLI::App* imp = cmd->add_subcommand(
      "import",
      "merge tunings from FILE (JSON from `kiln cache export`; - for stdin); the faster result wins");
  imp->fallthrough();
  imp->add_option("file", args->file, "input file, or - for stdin")->required();
  imp->add_flag("--json", args->json, "print the counts as JSON");
  imp->parse_complete_callback([chosen]() { *chosen = CacheAction::kImport; });
  return {cmd, [args, chosen, &global]() { return run_cache(*chosen, *args, global); }};
}

}  // namespace kiln::cli

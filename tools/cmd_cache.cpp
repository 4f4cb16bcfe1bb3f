// `kiln cache stats|list|clear`: inspect or empty the SQLite kernel cache (--cache-dir, else the
// default location).
#include <fmt/format.h>

#include <ctime>

#include "cache/kernel_cache.hpp"
#include "tools/cli.hpp"

namespace kiln::cli {
namespace {

enum class CacheAction { kStats, kList, kClear };

struct CacheArgs {
  bool json = false;
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
  fmt::print("  {:<10} {} ({} B)\n", "file", human_bytes(s->file_bytes), s->file_bytes);
  fmt::print("  {:<10} {}\n", "schema", s->user_version);
  fmt::print("  {:<10} {}\n", "journal", s->journal_mode);
  return kExitOk;
}

int cache_list(KernelCache& cache, const CacheArgs& args) {
  StatusOr<std::vector<CachedKernel>> rows = cache.list(/*with_cubins=*/false);
  if (!rows.ok()) return report_error("cache list", rows.status());
  if (args.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const CachedKernel& k : *rows) {
      j.push_back({{"key", k.key},
                   {"arch", k.arch},
                   {"entry", k.entry},
                   {"spec", k.spec},
                   {"config", k.config},
                   {"registers", k.registers},
                   {"smem", k.smem},
                   {"spills", k.spills},
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
  for (const CachedKernel& k : *rows) {
    fmt::print("{:<12}  {:<7}  {:>4}  {:>7}  {:>6}  {:>7.0f}ms  {:<20}  {:<28}  {}\n", k.key.substr(0, 12),
               k.arch, k.registers, k.smem, k.spills, k.compile_ms, utc_time(k.last_used_unix), k.config,
               k.spec);
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

int run_cache(CacheAction action, const CacheArgs& args, const GlobalOptions& global) {
  StatusOr<std::unique_ptr<KernelCache>> cache = open_cache(global);
  if (!cache.ok()) return report_error("cache", cache.status());
  switch (action) {
    case CacheAction::kStats: return cache_stats(**cache, args);
    case CacheAction::kList: return cache_list(**cache, args);
    case CacheAction::kClear: return cache_clear(**cache, args);
  }
  return kExitError;
}

}  // namespace

Command register_cache(CLI::App& app, const GlobalOptions& global) {
  auto args = std::make_shared<CacheArgs>();
  CLI::App* cmd =
      app.add_subcommand("cache",
                         "Inspect or empty the kernel cache (--cache-dir, else $KILN_CACHE_DIR, else "
                         "${XDG_CACHE_HOME:-~/.cache}/kiln).");
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
  return {cmd, [args, chosen, &global]() { return run_cache(*chosen, *args, global); }};
}

}  // namespace kiln::cli

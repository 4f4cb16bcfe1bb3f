// cache/kernel_cache.hpp — the SQLite cache of compiled kernels (and, later, tuning winners).
//
// One file: ${KILN_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kiln}/kiln.db, directory mode 0700.
// Table `kernels`: content key (sha256 hex, see cache_key.hpp) -> cubin blob, cubin sha256 (checked
// before every load: a mismatching row is deleted and reported as a miss), registers, smem, spills,
// compile ms, arch, entry name, created/last-used times. WAL journal, busy_timeout, PRAGMA
// user_version for migrations, BEGIN IMMEDIATE for writes; entries appear atomically (one INSERT
// in one transaction), so a second process sees either nothing or the whole kernel.
// Thread-safe: one connection guarded by a mutex.
//
//   KILN_ASSIGN_OR_RETURN(auto cache, kiln::KernelCache::open_default());
//   KILN_ASSIGN_OR_RETURN(std::optional<CachedKernel> hit, cache->get(key));
//   KILN_RETURN_IF_ERROR(cache->put(entry));
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/status.hpp"

struct sqlite3;

namespace kiln {

struct CachedKernel {
  std::string key;          // content key (hex sha256)
  std::string arch;         // "sm_90a"
  std::string entry;        // kernel symbol
  std::string spec;         // canonical spec text (for `kiln cache list`)
  std::string config;       // TileConfig::to_string()
  std::string cubin;        // ELF bytes
  int registers = -1;
  int smem = -1;
  int spills = -1;
  double compile_ms = 0;
  int64_t created_unix = 0;
  int64_t last_used_unix = 0;
};

struct CacheStats {
  std::string path;
  int64_t kernels = 0;
  int64_t cubin_bytes = 0;
  int64_t file_bytes = 0;
  int user_version = 0;
  std::string journal_mode;
};

class KernelCache {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens (creating directory 0700 and schema) the cache at dir/kiln.db.
  static StatusOr<std::unique_ptr<KernelCache>> open(const std::string& dir);
  // dir = $KILN_CACHE_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/kiln.
  static StatusOr<std::unique_ptr<KernelCache>> open_default();
  static std::string default_dir();
  ~KernelCache();

  // nullopt on miss. A row whose cubin no longer matches its stored sha256 is removed (miss).
  StatusOr<std::optional<CachedKernel>> get(const std::string& key);
  // Insert-or-ignore (the content key determines the cubin); the cubin sha256 is computed here.
  Status put(const CachedKernel& entry);
  StatusOr<CacheStats> stats();
  StatusOr<std::vector<CachedKernel>> list(bool with_cubins = false);
  Status clear();
  const std::string& path() const { return path_; }

 private:
  KernelCache(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::mutex mu_;
};

}  // namespace kiln

// cache/kernel_cache.hpp — the SQLite cache of compiled kernels (tunings: cache/tuning_store.hpp).
//
// One file: ${KILN_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kiln}/kiln.db, directory mode 0700.
// Table `kernels`: content key (sha256 hex, see cache_key.hpp) -> cubin blob, cubin sha256 (checked
// before every load: a mismatching row is deleted and reported as a miss), registers, smem, spills,
// compile ms, arch, entry name, spec and config text, created/last-used times. Rows go in and come
// out as the one kernel record, CompiledKernel (include/kiln/kernel.hpp). WAL journal, busy_timeout,
// PRAGMA user_version for migrations, BEGIN IMMEDIATE for writes; entries appear atomically (one
// INSERT in one transaction), so a second process sees either nothing or the whole kernel.
// Thread-safe: one connection guarded by a mutex.
//
// Size cap, least-recently-used eviction. The cubins a cache keeps are capped (max_cubin_bytes:
// KILN_CACHE_MAX_MB, default 1 GiB; 0 turns the cap off). A hit refreshes the kernel's last_used
// (at most once a minute per kernel, so hot hits stay read-only); put() evicts, inside the write
// transaction that inserts the new kernel, the least recently used other kernels (ties: oldest
// created, then key) until the cubins fit under the cap again. Invariants:
//   - the kernel being inserted is never evicted by its own insert, even when it alone exceeds
//     the cap (then it is the only kernel left): the caller's compile is never wasted;
//   - eviction and insertion hold the same write lock (BEGIN IMMEDIATE), so no process ever sees,
//     or evicts, a half-inserted kernel; another process's insert is either committed (and then
//     it is the most recently used kernel, evicted last) or not visible yet;
//   - eviction only deletes rows: a kernel already read (or loaded into a CUmodule) is unaffected.
// Freed pages are reused by later inserts; the file shrinks only on `kiln cache clear` (VACUUM).
//
//   KILN_ASSIGN_OR_RETURN(auto cache, kiln::KernelCache::open_default());
//   KILN_ASSIGN_OR_RETURN(std::optional<CompiledKernel> hit, cache->get(key));
//   KILN_RETURN_IF_ERROR(cache->put(kernel));
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kernel.hpp"
#include "kiln/status.hpp"

struct sqlite3;

namespace kiln {

struct CacheStats {
  std::string path;
  int64_t kernels = 0;
  int64_t cubin_bytes = 0;
  int64_t file_bytes = 0;
  int user_version = 0;
  std::string journal_mode;
  int64_t max_cubin_bytes = 0;  // the cap (0: none)
};

struct KernelCacheOptions {
  // Cap on the total cubin bytes kept; 0: no cap. Negative: KILN_CACHE_MAX_MB, else kDefaultMaxCubinBytes.
  int64_t max_cubin_bytes = -1;
};

class KernelCache {
 public:
  static constexpr int kSchemaVersion = 2;
  static constexpr int64_t kDefaultMaxCubinBytes = int64_t{1024} << 20;  // 1 GiB

  // Opens (creating directory 0700 and schema) the cache at dir/kiln.db. INVALID_ARGUMENT when
  // KILN_CACHE_MAX_MB (consulted only when options leave the cap negative) or KILN_CACHE_JOURNAL
  // is malformed.
  static StatusOr<std::unique_ptr<KernelCache>> open(const std::string& dir,
                                                     const KernelCacheOptions& options = {});
  // dir = $KILN_CACHE_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/kiln.
  static StatusOr<std::unique_ptr<KernelCache>> open_default();
  static std::string default_dir();
  ~KernelCache();

  // nullopt on miss. A row whose cubin no longer matches its stored sha256 is removed (miss).
  // A hit fills key, arch, entry, spec, config, cubin, registers, smem_static, both spill fields
  // (from the one stored spills column), compile_ms, created/last_used_unix, and from_cache = true;
  // source, ptx and log stay empty, stack_frame -1, threads and smem_dynamic 0.
  StatusOr<std::optional<CompiledKernel>> get(const std::string& key);
  // Insert-or-ignore (the content key determines the cubin); the cubin sha256 is computed here.
  // Stores key, arch, entry, spec, config, cubin, registers, smem_static, max(spill_stores,
  // spill_loads), compile_ms, and created_unix when set (else now).
  // Then evicts least-recently-used other kernels while the cubins exceed the cap (see above).
  Status put(const CompiledKernel& kernel);
  // Evicts least-recently-used kernels until the cubins fit under the cap (put() does this on its
  // own; this is for a cap that was lowered). Returns the number of kernels evicted.
  StatusOr<int64_t> enforce_cap();
  // Kernels this connection has evicted since it was opened.
  int64_t evictions() const { return evictions_.load(); }
  int64_t max_cubin_bytes() const { return max_cubin_bytes_; }
  StatusOr<CacheStats> stats();
  // Every kernel, most recently used first, each filled as get() fills a hit (the cubin only
  // with_cubins).
  StatusOr<std::vector<CompiledKernel>> list(bool with_cubins = false);
  Status clear();
  const std::string& path() const { return path_; }

 private:
  KernelCache(sqlite3* db, std::string path, int64_t max_cubin_bytes)
      : db_(db), path_(std::move(path)), max_cubin_bytes_(max_cubin_bytes) {}
  sqlite3* db_;
  std::string path_;
  int64_t max_cubin_bytes_;
  std::mutex mu_;
  std::atomic<int64_t> evictions_{0};
};

}  // namespace kiln

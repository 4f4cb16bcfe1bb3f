#include "cache/kernel_cache.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "cache/cache_db.hpp"
#include "cache/cache_key.hpp"
#include "cache/sqlite_util.hpp"
#include "common/env.hpp"

namespace kiln {
namespace {

using sqlite::Stmt;

// last_used is touched at most once per this many seconds per kernel: enough resolution for LRU
// eviction, and a hot get() does not turn into a write transaction every time.
constexpr int64_t kTouchIntervalS = 60;
// BEGIN IMMEDIATE already waits kBusyTimeoutMs for the write lock; these retries only cover a writer
// that holds it longer than that (a VACUUM of a large cache).
constexpr int kPutAttempts = 4;

int64_t now_unix() { return static_cast<int64_t>(std::time(nullptr)); }

int64_t file_size(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

constexpr const char* kColumns =
    "key, arch, entry, spec, config, registers, smem, spills, compile_ms, created, last_used, cubin, cubin_sha256";

// Reads a row selected with kColumns (cubin and its sha256 last; they may be NULL placeholders).
// The one spills column fills both spill fields.
CompiledKernel read_row(const Stmt& s) {
  CompiledKernel k;
  k.key = s.column_text(0);
  k.arch = s.column_text(1);
  k.entry = s.column_text(2);
  k.spec = s.column_text(3);
  k.config = s.column_text(4);
  k.registers = s.column_is_null(5) ? -1 : static_cast<int>(s.column_int64(5));
  k.smem_static = s.column_is_null(6) ? -1 : static_cast<int>(s.column_int64(6));
  k.spill_stores = k.spill_loads = s.column_is_null(7) ? -1 : static_cast<int>(s.column_int64(7));
  k.compile_ms = s.column_double(8);
  k.created_unix = s.column_int64(9);
  k.last_used_unix = s.column_int64(10);
  k.cubin = s.column_blob(11);
  k.from_cache = true;
  return k;
}

// KILN_CACHE_MAX_MB as bytes; the default when unset.
StatusOr<int64_t> cap_from_env() {
  const std::optional<std::string> v = env::get(env::kCacheMaxMb);
  if (!v) return KernelCache::kDefaultMaxCubinBytes;
  int64_t mb = -1;
  const char* end = v->data() + v->size();
  auto [ptr, ec] = std::from_chars(v->data(), end, mb);
  if (ec != std::errc() || ptr != end || mb < 0 || mb > (std::numeric_limits<int64_t>::max() >> 20)) {
    return InvalidArgument(std::string(env::kCacheMaxMb) + "='" + *v +
                           "' is not a cache size; expected a whole number of MiB such as 1024, or 0 for no cap");
  }
  return mb << 20;
}

// Inside a write transaction: deletes least-recently-used kernels other than keep_key until the
// cubins total at most cap bytes. Returns how many were deleted. keep_key is the kernel this
// transaction inserts (never evicted by its own insert); empty for none.
StatusOr<int64_t> evict_over_cap(sqlite3* db, const std::string& path, int64_t cap, const std::string& keep_key) {
  if (cap <= 0) return int64_t{0};
  int64_t total = 0;
  {
    // length() of a BLOB reads its size from the record header, not the cubin itself.
    KILN_ASSIGN_OR_RETURN(Stmt sum, Stmt::prepare(db, path, "SELECT coalesce(sum(length(cubin)), 0) FROM kernels"));
    KILN_ASSIGN_OR_RETURN(bool row, sum.step());
    if (row) total = sum.column_int64(0);
  }
  if (total <= cap) return int64_t{0};
  std::vector<std::string> victims;
  {
    KILN_ASSIGN_OR_RETURN(Stmt oldest, Stmt::prepare(db, path,
                                                     "SELECT key, length(cubin) FROM kernels WHERE key != ?1 "
                                                     "ORDER BY last_used ASC, created ASC, key ASC"));
    oldest.bind_text(1, keep_key);
    while (total > cap) {
      KILN_ASSIGN_OR_RETURN(bool row, oldest.step());
      if (!row) break;  // only keep_key is left: it stays, over the cap
      victims.push_back(oldest.column_text(0));
      total -= oldest.column_int64(1);
    }
  }  // finalized before the deletes
  KILN_ASSIGN_OR_RETURN(Stmt del, Stmt::prepare(db, path, "DELETE FROM kernels WHERE key = ?1"));
  for (const std::string& key : victims) {
    del.reset();
    del.bind_text(1, key);
    KILN_RETURN_IF_ERROR(del.step().status());
  }
  return static_cast<int64_t>(victims.size());
}

// One BEGIN IMMEDIATE; body(); COMMIT. Returns the SQLite code of the first failure (SQLITE_OK on
// success) and its Status in *err; a failed transaction is rolled back.
template <typename Body>
int write_once(sqlite3* db, const std::string& path, Status* err, Body&& body) {
  auto fail = [&](Status s) {
    *err = std::move(s);
    int rc = sqlite3_extended_errcode(db);
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? SQLITE_ERROR : rc;
  };
  Status s = sqlite::exec(db, path, "BEGIN IMMEDIATE");
  if (!s.ok()) return fail(s);
  s = body();  // every statement it prepares is finalized before COMMIT
  if (!s.ok()) return fail(s);
  s = sqlite::exec(db, path, "COMMIT");
  if (!s.ok()) return fail(s);
  return SQLITE_OK;
}

// Runs write_once until it succeeds, fails for a reason other than a busy database, or has been
// tried kPutAttempts times.
template <typename Body>
Status write_with_retry(sqlite3* db, const std::string& path, Body&& body) {
  Status err;
  for (int attempt = 1;; ++attempt) {
    int rc = write_once(db, path, &err, body);
    if (rc == SQLITE_OK) return Status::Ok();
    if (!sqlite::is_busy(rc) || attempt == kPutAttempts) return err;
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
  }
}

Status insert_row(sqlite3* db, const std::string& path, const CompiledKernel& e, const std::string& sha) {
  KILN_ASSIGN_OR_RETURN(Stmt st, Stmt::prepare(db, path,
                                               "INSERT OR IGNORE INTO kernels(key, arch, entry, spec, config, cubin, "
                                               "cubin_sha256, registers, smem, spills, compile_ms, created, last_used) "
                                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  const int64_t now = now_unix();
  st.bind_text(1, e.key);
  st.bind_text(2, e.arch);
  st.bind_text(3, e.entry);
  st.bind_text(4, e.spec);
  st.bind_text(5, e.config);
  st.bind_blob(6, e.cubin);
  st.bind_text(7, sha);
  st.bind_int64(8, e.registers);
  st.bind_int64(9, e.smem_static);
  st.bind_int64(10, std::max(e.spill_stores, e.spill_loads));
  st.bind_double(11, e.compile_ms);
  st.bind_int64(12, e.created_unix > 0 ? e.created_unix : now);
  st.bind_int64(13, now);
  return st.step().status();
}

}  // namespace

StatusOr<std::unique_ptr<KernelCache>> KernelCache::open(const std::string& dir,
                                                         const KernelCacheOptions& options) {
  int64_t cap = options.max_cubin_bytes;
  if (cap < 0) {
    KILN_ASSIGN_OR_RETURN(cap, cap_from_env());
  }
  KILN_RETURN_IF_ERROR(ensure_private_dir(dir));
  std::string path = dir;
  if (path.back() != '/') path += '/';
  path += "kiln.db";
  KILN_ASSIGN_OR_RETURN(sqlite3 * db, open_cache_db(path));
  return std::unique_ptr<KernelCache>(new KernelCache(db, std::move(path), cap));
}

StatusOr<std::unique_ptr<KernelCache>> KernelCache::open_default() { return open(default_dir()); }

std::string KernelCache::default_dir() {
  if (auto dir = env::get(env::kCacheDir)) return *dir;
  // XDG Base Directory spec: a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (auto xdg = env::get("XDG_CACHE_HOME"); xdg && xdg->front() == '/') return *xdg + "/kiln";
  if (auto home = env::get("HOME")) return *home + "/.cache/kiln";
  return "/tmp/kiln-cache-" + std::to_string(static_cast<unsigned long>(::getuid()));
}

KernelCache::~KernelCache() { sqlite3_close_v2(db_); }

StatusOr<std::optional<CompiledKernel>> KernelCache::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  CompiledKernel k;
  std::string stored_sha;
  {
    KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db_, path_, std::string("SELECT ") + kColumns +
                                                                " FROM kernels WHERE key = ?1"));
    s.bind_text(1, key);
    KILN_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return std::optional<CompiledKernel>();
    k = read_row(s);
    stored_sha = s.column_text(12);
  }  // finalized: the read transaction ends before any write below

  if (sha256_hex(k.cubin) != stored_sha) {
    // Bit rot or tampering. Best effort removal (only of this very row, in case another process
    // replaced it meanwhile); the answer is a miss either way, and the caller recompiles.
    StatusOr<Stmt> del = Stmt::prepare(db_, path_, "DELETE FROM kernels WHERE key = ?1 AND cubin_sha256 = ?2");
    if (del.ok()) {
      del->bind_text(1, key);
      del->bind_text(2, stored_sha);
      (void)del->step();
    }
    return std::optional<CompiledKernel>();
  }

  const int64_t now = now_unix();
  if (now - k.last_used_unix >= kTouchIntervalS) {
    // LRU bookkeeping must never stall or fail a hit: no busy wait, errors ignored.
    sqlite3_busy_timeout(db_, 0);
    StatusOr<Stmt> touch = Stmt::prepare(db_, path_, "UPDATE kernels SET last_used = ?1 WHERE key = ?2");
    if (touch.ok()) {
      touch->bind_int64(1, now);
      touch->bind_text(2, key);
      if (touch->step().ok()) k.last_used_unix = now;
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  }
  return std::optional<CompiledKernel>(std::move(k));
}

Status KernelCache::put(const CompiledKernel& kernel) {
  if (kernel.key.empty()) {
    return InvalidArgument("KernelCache::put: the key is empty; use kernel_cache_key()");
  }
  if (kernel.cubin.empty()) {
    return InvalidArgument("KernelCache::put: the cubin for key " + kernel.key + " is empty");
  }
  const std::string sha = sha256_hex(kernel.cubin);
  std::lock_guard<std::mutex> lock(mu_);
  int64_t evicted = 0;
  KILN_RETURN_IF_ERROR(write_with_retry(db_, path_, [&]() -> Status {
    evicted = 0;
    KILN_RETURN_IF_ERROR(insert_row(db_, path_, kernel, sha));
    KILN_ASSIGN_OR_RETURN(evicted, evict_over_cap(db_, path_, max_cubin_bytes_, kernel.key));
    return Status::Ok();
  }));
  evictions_.fetch_add(evicted);
  return Status::Ok();
}

StatusOr<int64_t> KernelCache::enforce_cap() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t evicted = 0;
  KILN_RETURN_IF_ERROR(write_with_retry(db_, path_, [&]() -> Status {
    KILN_ASSIGN_OR_RETURN(evicted, evict_over_cap(db_, path_, max_cubin_bytes_, std::string()));
    return Status::Ok();
  }));
  evictions_.fetch_add(evicted);
  return evicted;
}

StatusOr<CacheStats> KernelCache::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats st;
  st.path = path_;
  st.max_cubin_bytes = max_cubin_bytes_;
  {
    KILN_ASSIGN_OR_RETURN(Stmt s,
                          Stmt::prepare(db_, path_, "SELECT count(*), coalesce(sum(length(cubin)), 0) FROM kernels"));
    KILN_ASSIGN_OR_RETURN(bool row, s.step());
    if (row) {
      st.kernels = s.column_int64(0);
      st.cubin_bytes = s.column_int64(1);
    }
  }
  KILN_ASSIGN_OR_RETURN(int64_t version, sqlite::query_int(db_, path_, "PRAGMA user_version"));
  st.user_version = static_cast<int>(version);
  KILN_ASSIGN_OR_RETURN(st.journal_mode, sqlite::query_text(db_, path_, "PRAGMA journal_mode"));
  // What the cache occupies on disk: the database plus a WAL not yet checkpointed into it.
  st.file_bytes = file_size(path_) + file_size(path_ + "-wal");
  return st;
}

StatusOr<std::vector<CompiledKernel>> KernelCache::list(bool with_cubins) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string sql = "SELECT key, arch, entry, spec, config, registers, smem, spills, compile_ms, created, last_used, ";
  sql += with_cubins ? "cubin" : "NULL";
  sql += " FROM kernels ORDER BY last_used DESC, key";
  KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db_, path_, sql));
  std::vector<CompiledKernel> out;
  while (true) {
    KILN_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    out.push_back(read_row(s));
  }
  return out;
}

Status KernelCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  KILN_RETURN_IF_ERROR(sqlite::exec(db_, path_, "DELETE FROM kernels"));
  // Give the space back. Both steps are housekeeping: another process using the cache may keep
  // them from running now (SQLITE_BUSY), which is fine.
  for (const char* sql : {"VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"}) {
    char* msg = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &msg);
    sqlite3_free(msg);
    if (rc != SQLITE_OK && !sqlite::is_busy(rc)) return sqlite::error(db_, rc, sql, path_);
  }
  return Status::Ok();
}

}  // namespace kiln

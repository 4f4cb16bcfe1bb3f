#include "cache/kernel_cache.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

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
CachedKernel read_row(const Stmt& s) {
  CachedKernel k;
  k.key = s.column_text(0);
  k.arch = s.column_text(1);
  k.entry = s.column_text(2);
  k.spec = s.column_text(3);
  k.config = s.column_text(4);
  k.registers = s.column_is_null(5) ? -1 : static_cast<int>(s.column_int64(5));
  k.smem = s.column_is_null(6) ? -1 : static_cast<int>(s.column_int64(6));
  k.spills = s.column_is_null(7) ? -1 : static_cast<int>(s.column_int64(7));
  k.compile_ms = s.column_double(8);
  k.created_unix = s.column_int64(9);
  k.last_used_unix = s.column_int64(10);
  k.cubin = s.column_blob(11);
  return k;
}

// One BEGIN IMMEDIATE; INSERT OR IGNORE; COMMIT. Returns the SQLite code of the first failure.
int insert_once(sqlite3* db, const std::string& path, const CachedKernel& e, const std::string& sha, Status* err) {
  auto fail = [&](Status s) {
    *err = std::move(s);
    int rc = sqlite3_extended_errcode(db);
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? SQLITE_ERROR : rc;
  };
  Status s = sqlite::exec(db, path, "BEGIN IMMEDIATE");
  if (!s.ok()) return fail(s);
  {
    StatusOr<Stmt> st = Stmt::prepare(db, path,
                                      "INSERT OR IGNORE INTO kernels(key, arch, entry, spec, config, cubin, "
                                      "cubin_sha256, registers, smem, spills, compile_ms, created, last_used) "
                                      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    if (!st.ok()) return fail(st.status());
    const int64_t now = now_unix();
    st->bind_text(1, e.key);
    st->bind_text(2, e.arch);
    st->bind_text(3, e.entry);
    st->bind_text(4, e.spec);
    st->bind_text(5, e.config);
    st->bind_blob(6, e.cubin);
    st->bind_text(7, sha);
    st->bind_int64(8, e.registers);
    st->bind_int64(9, e.smem);
    st->bind_int64(10, e.spills);
    st->bind_double(11, e.compile_ms);
    st->bind_int64(12, e.created_unix > 0 ? e.created_unix : now);
    st->bind_int64(13, now);
    StatusOr<bool> stepped = st->step();
    if (!stepped.ok()) return fail(stepped.status());
  }  // the statement is finalized before COMMIT
  s = sqlite::exec(db, path, "COMMIT");
  if (!s.ok()) return fail(s);
  return SQLITE_OK;
}

}  // namespace

StatusOr<std::unique_ptr<KernelCache>> KernelCache::open(const std::string& dir) {
  KILN_RETURN_IF_ERROR(ensure_private_dir(dir));
  std::string path = dir;
  if (path.back() != '/') path += '/';
  path += "kiln.db";
  KILN_ASSIGN_OR_RETURN(sqlite3 * db, open_cache_db(path));
  return std::unique_ptr<KernelCache>(new KernelCache(db, std::move(path)));
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

StatusOr<std::optional<CachedKernel>> KernelCache::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  CachedKernel k;
  std::string stored_sha;
  {
    KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db_, path_, std::string("SELECT ") + kColumns +
                                                                " FROM kernels WHERE key = ?1"));
    s.bind_text(1, key);
    KILN_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return std::optional<CachedKernel>();
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
    return std::optional<CachedKernel>();
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
  return std::optional<CachedKernel>(std::move(k));
}

Status KernelCache::put(const CachedKernel& entry) {
  if (entry.key.empty()) return InvalidArgument("KernelCache::put: the key is empty; use kernel_cache_key()");
  if (entry.cubin.empty()) return InvalidArgument("KernelCache::put: the cubin for key " + entry.key + " is empty");
  const std::string sha = sha256_hex(entry.cubin);
  std::lock_guard<std::mutex> lock(mu_);
  Status err;
  for (int attempt = 1;; ++attempt) {
    int rc = insert_once(db_, path_, entry, sha, &err);
    if (rc == SQLITE_OK) return Status::Ok();
    if (!sqlite::is_busy(rc) || attempt == kPutAttempts) return err;
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
  }
}

StatusOr<CacheStats> KernelCache::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats st;
  st.path = path_;
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

StatusOr<std::vector<CachedKernel>> KernelCache::list(bool with_cubins) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string sql = "SELECT key, arch, entry, spec, config, registers, smem, spills, compile_ms, created, last_used, ";
  sql += with_cubins ? "cubin" : "NULL";
  sql += " FROM kernels ORDER BY last_used DESC, key";
  KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db_, path_, sql));
  std::vector<CachedKernel> out;
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

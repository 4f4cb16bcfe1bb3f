#include "cache/cache_db.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "cache/sqlite_util.hpp"
#include "common/env.hpp"

namespace kiln {
namespace {

static_assert(kLatestSchemaVersion == KernelCache::kSchemaVersion,
              "the migration list and KernelCache must agree on the schema version");

// migrations[v] takes a database from user_version v to v + 1. Append only: a shipped migration is
// never edited, because databases in the field have already run it.
constexpr const char* kMigrations[kLatestSchemaVersion] = {
    // 0 -> 1: compiled kernels by content key. last_used is indexed for LRU eviction.
    "CREATE TABLE kernels("
    "  key TEXT PRIMARY KEY NOT NULL,"
    "  arch TEXT, entry TEXT, spec TEXT, config TEXT,"
    "  cubin BLOB NOT NULL, cubin_sha256 TEXT NOT NULL,"
    "  registers INTEGER, smem INTEGER, spills INTEGER, compile_ms REAL,"
    "  created INTEGER, last_used INTEGER);"
    "CREATE INDEX kernels_by_last_used ON kernels(last_used);",
    // 1 -> 2: tuning winners and the shapes that ran untuned (cache/tuning_store.hpp). The hard key
    // (cc, sm_count, codegen, nvrtc_major) must match for a row to be used; gpu_name and driver are
    // soft fields recorded beside it. spec is the canonical spec text with sizes stripped (experts=0),
    // m_bucket a value of the fixed M grid, config the explicit JSON tuple (never an index).
    "CREATE TABLE tunings("
    "  cc INTEGER NOT NULL, sm_count INTEGER NOT NULL,"
    "  codegen INTEGER NOT NULL, nvrtc_major INTEGER NOT NULL,"
    "  spec TEXT NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, experts INTEGER NOT NULL,"
    "  m_bucket INTEGER NOT NULL,"
    "  family TEXT NOT NULL, config TEXT NOT NULL,"
    "  median_us REAL NOT NULL, candidates INTEGER NOT NULL, tuned INTEGER NOT NULL,"
    "  gpu_name TEXT NOT NULL DEFAULT '', driver TEXT NOT NULL DEFAULT '',"
    "  PRIMARY KEY(cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket)) WITHOUT ROWID;"
    "CREATE TABLE untuned("
    "  cc INTEGER NOT NULL, sm_count INTEGER NOT NULL,"
    "  codegen INTEGER NOT NULL, nvrtc_major INTEGER NOT NULL,"
    "  spec TEXT NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, experts INTEGER NOT NULL,"
    "  m_bucket INTEGER NOT NULL,"
    "  gpu_name TEXT NOT NULL DEFAULT '', driver TEXT NOT NULL DEFAULT '',"
    "  seen INTEGER NOT NULL, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL,"
    "  PRIMARY KEY(cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket)) WITHOUT ROWID;",
};

std::string sys_error(const std::string& what, const std::string& path, int err) {
  return "cache: " + what + " " + path + " failed: " + std::strerror(err);
}

// Closes a connection unless released: every early return of try_open() leaves nothing open.
class DbGuard {
 public:
  explicit DbGuard(sqlite3* db) : db_(db) {}
  ~DbGuard() {
    if (db_ != nullptr) sqlite3_close_v2(db_);
  }
  sqlite3* release() {
    sqlite3* db = db_;
    db_ = nullptr;
    return db;
  }

 private:
  sqlite3* db_;
};

// An exclusive flock held for the guard's lifetime (released when the descriptor closes).
class FileLock {
 public:
  static StatusOr<FileLock> acquire(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return CacheError(sys_error("open lock file", path, errno));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return CacheError(sys_error("flock", path, err));
    }
    return FileLock(fd);
  }
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// Marks the status as "this file is not a usable kiln database" for the caller's recovery path.
Status unusable(bool* flag, Status why) {
  *flag = true;
  return why;
}

// WAL lets readers and one writer proceed together. It needs shared memory beside the file, which
// network file systems do not provide; there the classic rollback journal (DELETE) still works:
// SQLite refuses the switch to WAL and kiln takes DELETE. KILN_CACHE_JOURNAL=delete asks for the
// rollback journal up front (a file system where WAL appears to work but its shared memory is not
// coherent between hosts; and the tests of the fallback).
Status set_journal_mode(sqlite3* db, const std::string& path, bool want_wal, bool* bad_file) {
  if (want_wal) {
    // Several processes opening a fresh file at once (`kiln tune --devices`: one per GPU) all switch
    // it to WAL. The switch takes an exclusive lock, and SQLite answers BUSY at once, without the busy
    // handler (two shared-lock holders upgrading would deadlock). Retry until one of them has switched
    // it: the others then read "wal" without a lock upgrade (tests/unit/cache/tuning_concurrency_test.cpp).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    StatusOr<std::string> mode = sqlite::query_text(db, path, "PRAGMA journal_mode=WAL");
    for (int attempt = 1; !mode.ok() && sqlite::is_busy(sqlite3_extended_errcode(db)) &&
                          std::chrono::steady_clock::now() < deadline;
         ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, 5 * attempt)));
      mode = sqlite::query_text(db, path, "PRAGMA journal_mode=WAL");
    }
    if (mode.ok() && *mode == "wal") return Status::Ok();
    if (!mode.ok()) {
      int rc = sqlite3_extended_errcode(db);
      if (sqlite::is_corrupt(rc)) return unusable(bad_file, mode.status());
      if (sqlite::is_busy(rc)) return mode.status();
    }
  }
  StatusOr<std::string> fallback = sqlite::query_text(db, path, "PRAGMA journal_mode=DELETE");
  if (!fallback.ok()) {
    const int rc = sqlite3_extended_errcode(db);
    if (sqlite::is_corrupt(rc)) return unusable(bad_file, fallback.status());
    // Leaving WAL needs the only connection to the file. When another process holds it open in WAL
    // mode, this connection works in WAL like the others (SQLite reads the mode from the file).
    if (!want_wal && sqlite::is_busy(rc)) return Status::Ok();
    return fallback.status();
  }
  return Status::Ok();
}

struct Header {
  int64_t application_id = 0;
  int64_t user_version = 0;
  int64_t objects = 0;  // rows of sqlite_master: tables, indexes, ...
};

StatusOr<Header> read_header(sqlite3* db, const std::string& path, bool* bad_file) {
  Header h;
  StatusOr<int64_t> v = sqlite::query_int(db, path, "PRAGMA application_id");
  if (v.ok()) {
    h.application_id = *v;
    v = sqlite::query_int(db, path, "PRAGMA user_version");
  }
  if (v.ok()) {
    h.user_version = *v;
    v = sqlite::query_int(db, path, "SELECT count(*) FROM sqlite_master");
  }
  if (!v.ok()) {
    if (sqlite::is_corrupt(sqlite3_extended_errcode(db))) return unusable(bad_file, v.status());
    return v.status();
  }
  h.objects = *v;
  return h;
}

Status newer_kiln_error(const std::string& path, int64_t version) {
  return CacheError("cache database " + path + " was written by a newer kiln (schema version " +
                    std::to_string(version) + "; this kiln knows up to " + std::to_string(kLatestSchemaVersion) +
                    "); upgrade kiln or point KILN_CACHE_DIR at another directory");
}

// Brings the schema to kLatestSchemaVersion inside one BEGIN IMMEDIATE transaction, re-reading the
// header under the write lock so that two processes creating the same fresh file do it once.
Status migrate(sqlite3* db, const std::string& path, bool* bad_file) {
  KILN_ASSIGN_OR_RETURN(Header h, read_header(db, path, bad_file));
  if (h.application_id == kApplicationId && h.user_version == kLatestSchemaVersion) return Status::Ok();

  KILN_RETURN_IF_ERROR(sqlite::exec(db, path, "BEGIN IMMEDIATE"));
  auto fail = [&](Status s) {
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  };
  StatusOr<Header> locked = read_header(db, path, bad_file);
  if (!locked.ok()) return fail(locked.status());
  h = *locked;

  const bool fresh = h.application_id == 0 && h.user_version == 0 && h.objects == 0;
  if (!fresh && h.application_id != kApplicationId) {
    return fail(unusable(bad_file, CacheError("cache database " + path + " belongs to another application "
                                              "(application_id " + std::to_string(h.application_id) +
                                              ", user_version " + std::to_string(h.user_version) + ")")));
  }
  if (h.user_version > kLatestSchemaVersion) return fail(newer_kiln_error(path, h.user_version));
  if (h.user_version < 0) {
    return fail(unusable(bad_file, CacheError("cache database " + path + " has a negative schema version " +
                                              std::to_string(h.user_version))));
  }
  for (int64_t v = h.user_version; v < kLatestSchemaVersion; ++v) {
    Status s = sqlite::exec(db, path, kMigrations[v]);
    if (!s.ok()) return fail(s.with_context("migrating the cache schema from version " + std::to_string(v)));
  }
  const std::string stamp = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                            "; PRAGMA user_version=" + std::to_string(kLatestSchemaVersion) + ";";
  Status s = sqlite::exec(db, path, stamp.c_str());
  if (!s.ok()) return fail(s);
  s = sqlite::exec(db, path, "COMMIT");
  if (!s.ok()) return fail(s);
  return Status::Ok();
}

// One attempt to open path. *bad_file is set when the failure means the file must be set aside.
StatusOr<sqlite3*> try_open(const std::string& path, bool want_wal, bool* bad_file) {
  *bad_file = false;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  DbGuard guard(raw);  // sqlite3_open_v2 returns a handle to close even when it fails
  if (rc != SQLITE_OK) return sqlite::error(raw, rc, "open", path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);

  KILN_RETURN_IF_ERROR(set_journal_mode(raw, path, want_wal, bad_file));
  KILN_RETURN_IF_ERROR(sqlite::exec(raw, path, "PRAGMA synchronous=NORMAL"));
  KILN_RETURN_IF_ERROR(migrate(raw, path, bad_file));
  return guard.release();
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Moves path (and its journals) to path.corrupt-<unix time>. A stale -wal or -journal beside a fresh
// database would be replayed into it, so they go along; -shm is rebuilt by SQLite and is removed.
Status set_aside(const std::string& path) {
  std::string aside = path + ".corrupt-" + std::to_string(static_cast<long long>(std::time(nullptr)));
  if (exists(aside)) {
    aside += '-';  // two set-asides within one second
    aside += std::to_string(static_cast<long long>(::getpid()));
  }
  if (::rename(path.c_str(), aside.c_str()) != 0 && errno != ENOENT) {
    return CacheError(sys_error("moving the unusable database aside: rename", path + " -> " + aside, errno));
  }
  for (const char* suffix : {"-wal", "-journal"}) {
    const std::string from = path + suffix;
    if (::rename(from.c_str(), (aside + suffix).c_str()) != 0 && errno != ENOENT) {
      return CacheError(sys_error("moving the unusable journal aside: rename", from, errno));
    }
  }
  const std::string shm = path + "-shm";
  if (::unlink(shm.c_str()) != 0 && errno != ENOENT) return CacheError(sys_error("unlink", shm, errno));
  return Status::Ok();
}

}  // namespace

Status ensure_private_dir(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("cache directory is empty; set KILN_CACHE_DIR to a directory path");
  // Create each missing component, like mkdir -p, but 0700 for every directory kiln creates.
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string prefix = dir.substr(0, pos);
    if (prefix.empty() || prefix.back() == '/') continue;
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      // mkdir's mode is masked by the umask; a umask like 0277 must not leave kiln unable to write.
      if (::chmod(prefix.c_str(), 0700) != 0) return CacheError(sys_error("chmod 0700", prefix, errno));
    } else if (errno != EEXIST) {
      return CacheError(sys_error("mkdir", prefix, errno));
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return CacheError(sys_error("stat", dir, errno));
  if (!S_ISDIR(st.st_mode)) return CacheError("cache: " + dir + " exists and is not a directory");
  return Status::Ok();
}

namespace {

// KILN_CACHE_JOURNAL: true for WAL (unset, "wal"), false for the rollback journal ("delete").
StatusOr<bool> wal_wanted() {
  const std::optional<std::string> v = env::get(env::kCacheJournal);
  if (!v || *v == "wal" || *v == "WAL") return true;
  if (*v == "delete" || *v == "DELETE") return false;
  return InvalidArgument(std::string(env::kCacheJournal) + "='" + *v +
                         "' is not a journal mode kiln uses; expected 'wal' (the default) or 'delete'");
}

}  // namespace

StatusOr<sqlite3*> open_cache_db(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(const bool want_wal, wal_wanted());
  bool bad_file = false;
  StatusOr<sqlite3*> db = try_open(path, want_wal, &bad_file);
  if (db.ok() || !bad_file) return db;

  // Recovery: serialise with any other process doing the same, and look again under the lock: the
  // file we judged may already have been replaced by a fresh database.
  KILN_ASSIGN_OR_RETURN(FileLock lock, FileLock::acquire(path + ".lock"));
  db = try_open(path, want_wal, &bad_file);
  if (db.ok() || !bad_file) return db;
  KILN_RETURN_IF_ERROR(set_aside(path).with_context(db.status().message()));
  db = try_open(path, want_wal, &bad_file);
  if (!db.ok()) return db.status().with_context("cache: rebuilding " + path + " after setting it aside");
  return db;
}

}  // namespace kiln

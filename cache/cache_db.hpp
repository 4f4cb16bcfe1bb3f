// cache/cache_db.hpp — opening kiln.db: private directory, connection settings, schema migrations,
// and recovery from a file that is not (or no longer) a kiln database. Private to cache/.
//
// Invariants once open_cache_db() returns a connection:
//   - dir exists (created 0700 with any missing parents; an existing dir is used as it is);
//   - busy_timeout is kBusyTimeoutMs, synchronous=NORMAL, extended result codes are on;
//   - journal_mode is WAL, or DELETE where WAL is unavailable (network file systems) or where
//     KILN_CACHE_JOURNAL=delete asks for it (unless another process holds the file open in WAL
//     mode: then this connection uses WAL too, as SQLite requires);
//   - application_id is kApplicationId and user_version is kLatestSchemaVersion.
// A file that SQLite rejects (SQLITE_NOTADB / SQLITE_CORRUPT) or a foreign SQLite database (another
// application's tables, no kiln application_id) is renamed to kiln.db.corrupt-<unix time> and a fresh
// database is created: the cache is a cache, so rebuilding beats asking the user to delete files.
// The set-aside happens under an flock on dir/kiln.db.lock and re-checks the file under that lock,
// so two processes that find the same bad file never move each other's fresh database.
// A database written by a newer kiln (kiln application_id, user_version above ours) is not
// touched: CacheError naming both versions.
//
//   KILN_RETURN_IF_ERROR(ensure_private_dir(dir));
//   KILN_ASSIGN_OR_RETURN(sqlite3* db, open_cache_db(dir + "/kiln.db"));
#pragma once

#include <string>

#include "kiln/status.hpp"

struct sqlite3;

namespace kiln {

inline constexpr int kApplicationId = 0x6b696c6e;  // "kiln" in ASCII, in the SQLite file header
inline constexpr int kLatestSchemaVersion = 2;     // == KernelCache::kSchemaVersion
inline constexpr int kBusyTimeoutMs = 10000;

// Creates dir and missing parents with mode 0700 (independent of the umask). Never loosens or
// tightens the mode of a directory that already exists.
Status ensure_private_dir(const std::string& dir);
// Opens, configures and migrates the cache database at path (its directory must exist).
// INVALID_ARGUMENT when KILN_CACHE_JOURNAL holds something other than wal or delete.
// The caller owns the connection (sqlite3_close_v2).
StatusOr<sqlite3*> open_cache_db(const std::string& path);

}  // namespace kiln

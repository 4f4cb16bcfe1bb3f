// cache/sqlite_util.hpp — small RAII and error helpers over the SQLite C API (private to cache/).
//
// Stmt owns a prepared statement (finalized on every path); sqlite_error() turns a result code into
// kiln's CacheError wording: "sqlite <op> failed on <path>: SQLITE_BUSY (5): database is locked".
//
//   KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db, path, "SELECT cubin FROM kernels WHERE key = ?1"));
//   s.bind_text(1, key);
//   KILN_ASSIGN_OR_RETURN(bool row, s.step());
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/status.hpp"

namespace kiln::sqlite {

// "SQLITE_BUSY" for SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, ...).
const char* code_name(int rc);
// The primary result code (extended codes carry it in their low byte).
inline int primary(int rc) { return rc & 0xff; }
// True for the codes that mean "this file is not a usable SQLite database".
inline bool is_corrupt(int rc) { return primary(rc) == SQLITE_NOTADB || primary(rc) == SQLITE_CORRUPT; }
inline bool is_busy(int rc) { return primary(rc) == SQLITE_BUSY || primary(rc) == SQLITE_LOCKED; }

// CacheError("sqlite <op> failed on <path>: <code name> (<code>): <errmsg>"). db may be null.
Status error(sqlite3* db, int rc, std::string_view op, std::string_view path);

// Runs one or more statements that return no rows we need.
Status exec(sqlite3* db, std::string_view path, const char* sql);

class Stmt {
 public:
  static StatusOr<Stmt> prepare(sqlite3* db, std::string_view path, std::string_view sql);
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Binding copies the bytes (SQLITE_TRANSIENT), so arguments need not outlive the statement.
  void bind_text(int index, std::string_view text);
  void bind_blob(int index, std::string_view bytes);
  void bind_int64(int index, int64_t value);
  void bind_double(int index, double value);

  // true: a row is ready; false: done. Errors carry the statement's SQL as the op.
  StatusOr<bool> step();
  // The raw result code of the last step (SQLITE_ROW, SQLITE_DONE, SQLITE_BUSY, ...).
  int last_rc() const { return last_rc_; }
  void reset();

  std::string column_text(int col) const;
  std::string column_blob(int col) const;
  int64_t column_int64(int col) const;
  double column_double(int col) const;
  bool column_is_null(int col) const;

 private:
  Stmt(sqlite3* db, sqlite3_stmt* stmt, std::string_view path, std::string_view sql)
      : db_(db), stmt_(stmt), path_(path), sql_(sql) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string path_;
  std::string sql_;
  int last_rc_ = SQLITE_OK;
};

// A single-row, single-column query ("PRAGMA user_version") as int64 / text.
StatusOr<int64_t> query_int(sqlite3* db, std::string_view path, std::string_view sql);
StatusOr<std::string> query_text(sqlite3* db, std::string_view path, std::string_view sql);

}  // namespace kiln::sqlite

#include "cache/sqlite_util.hpp"

#include <utility>

namespace kiln::sqlite {

const char* code_name(int rc) {
  switch (primary(rc)) {
    case SQLITE_OK: return "SQLITE_OK";
    case SQLITE_ERROR: return "SQLITE_ERROR";
    case SQLITE_INTERNAL: return "SQLITE_INTERNAL";
    case SQLITE_PERM: return "SQLITE_PERM";
    case SQLITE_ABORT: return "SQLITE_ABORT";
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_NOMEM: return "SQLITE_NOMEM";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_INTERRUPT: return "SQLITE_INTERRUPT";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_NOTFOUND: return "SQLITE_NOTFOUND";
    case SQLITE_FULL: return "SQLITE_FULL";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_PROTOCOL: return "SQLITE_PROTOCOL";
    case SQLITE_EMPTY: return "SQLITE_EMPTY";
    case SQLITE_SCHEMA: return "SQLITE_SCHEMA";
    case SQLITE_TOOBIG: return "SQLITE_TOOBIG";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_MISMATCH: return "SQLITE_MISMATCH";
    case SQLITE_MISUSE: return "SQLITE_MISUSE";
    case SQLITE_NOLFS: return "SQLITE_NOLFS";
    case SQLITE_AUTH: return "SQLITE_AUTH";
    case SQLITE_FORMAT: return "SQLITE_FORMAT";
    case SQLITE_RANGE: return "SQLITE_RANGE";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    case SQLITE_NOTICE: return "SQLITE_NOTICE";
    case SQLITE_WARNING: return "SQLITE_WARNING";
    case SQLITE_ROW: return "SQLITE_ROW";
    case SQLITE_DONE: return "SQLITE_DONE";
  }
  return "SQLITE_UNKNOWN";
}

Status error(sqlite3* db, int rc, std::string_view op, std::string_view path) {
  // sqlite3_errmsg describes the most recent failure on the connection, which is rc's when the
  // caller reports right away; without a connection fall back to the generic text for rc.
  const char* msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return CacheError("sqlite " + std::string(op) + " failed on " + std::string(path) + ": " + code_name(rc) + " (" +
                    std::to_string(rc) + "): " + (msg ? msg : "no message"));
}

Status exec(sqlite3* db, std::string_view path, const char* sql) {
  char* msg = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &msg);
  if (msg != nullptr) sqlite3_free(msg);  // sqlite3_errmsg still holds the same text
  if (rc != SQLITE_OK) return error(db, rc, sql, path);
  return Status::Ok();
}

StatusOr<Stmt> Stmt::prepare(sqlite3* db, std::string_view path, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return error(db, rc, "prepare \"" + std::string(sql) + "\"", path);
  }
  return Stmt(db, stmt, path, sql);
}

Stmt::Stmt(Stmt&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), path_(std::move(other.path_)),
      sql_(std::move(other.sql_)), last_rc_(other.last_rc_) {}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    path_ = std::move(other.path_);
    sql_ = std::move(other.sql_);
    last_rc_ = other.last_rc_;
  }
  return *this;
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }  // finalize(nullptr) is a no-op

void Stmt::bind_text(int index, std::string_view text) {
  sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}
void Stmt::bind_blob(int index, std::string_view bytes) {
  // A zero-length blob with a null pointer would bind NULL; bind an empty blob instead.
  if (bytes.empty()) {
    sqlite3_bind_zeroblob(stmt_, index, 0);
  } else {
    sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  }
}
void Stmt::bind_int64(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
void Stmt::bind_double(int index, double value) { sqlite3_bind_double(stmt_, index, value); }

StatusOr<bool> Stmt::step() {
  last_rc_ = sqlite3_step(stmt_);
  if (last_rc_ == SQLITE_ROW) return true;
  if (last_rc_ == SQLITE_DONE) return false;
  return error(db_, last_rc_, "\"" + sql_ + "\"", path_);
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Stmt::column_text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}
std::string Stmt::column_blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}
int64_t Stmt::column_int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::column_double(int col) const { return sqlite3_column_double(stmt_, col); }
bool Stmt::column_is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

StatusOr<int64_t> query_int(sqlite3* db, std::string_view path, std::string_view sql) {
  KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db, path, sql));
  KILN_ASSIGN_OR_RETURN(bool row, s.step());
  return row ? s.column_int64(0) : int64_t{0};
}

StatusOr<std::string> query_text(sqlite3* db, std::string_view path, std::string_view sql) {
  KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db, path, sql));
  KILN_ASSIGN_OR_RETURN(bool row, s.step());
  return row ? s.column_text(0) : std::string();
}

}  // namespace kiln::sqlite

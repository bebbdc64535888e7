// sqlite_connection.cc: SqliteCache's SQLite plumbing: error mapping, connections, statements.
#include "server/cache/sqlite_connection.h"

#include "server/util/strings.h"

namespace coopd::sqlite_internal {

absl::Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string msg = StrCat("sqlite: ", what, ": ", detail);
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(
          StrCat(msg, " (the file system holding the cache has no space left)"));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(
          StrCat(msg, " (another process holds the cache database; retry)"));
    case SQLITE_INTERRUPT:
      return absl::UnavailableError(StrCat(msg, " (coopd is shutting down)"));
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::FailedPreconditionError(msg);
    case SQLITE_IOERR:
      return absl::UnavailableError(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status Exec(sqlite3* db, const char* sql, std::string_view what) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, what);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Connection>> OpenConnection(const std::string& path, bool create,
                                                           std::chrono::milliseconds busy) {
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  auto conn = std::make_unique<Connection>();
  conn->db = raw;
  if (rc != SQLITE_OK) {
    return absl::FailedPreconditionError(
        StrCat("cache: cannot open ", path, ": ", raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  // A writer in another process (or a checkpoint) can hold a lock briefly.
  sqlite3_busy_timeout(raw, static_cast<int>(busy.count()));
  return conn;
}

Stmt::Stmt(Connection& c, const char* sql) : db_(c.db) {
  auto it = c.statements.find(sql);
  if (it != c.statements.end()) {
    stmt_ = it->second;
    return;
  }
  sqlite3_stmt* raw = nullptr;
  prepare_rc_ = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  if (prepare_rc_ == SQLITE_OK) {
    c.statements.emplace(sql, raw);
    stmt_ = raw;
  } else {
    sqlite3_finalize(raw);
  }
}

absl::Status Stmt::Run(std::string_view what) {
  if (!ok()) return status(what);
  int rc;
  while ((rc = sqlite3_step(stmt_)) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what);
  return absl::OkStatus();
}

Transaction::Transaction(sqlite3* db) : db_(db), status_(Exec(db, "BEGIN IMMEDIATE", "begin")) {}

Transaction::~Transaction() {
  if (status_.ok() && !committed_ && !sqlite3_get_autocommit(db_)) {
    Exec(db_, "ROLLBACK", "rollback").IgnoreError();
  }
}

absl::Status Transaction::Commit() {
  if (!status_.ok()) return status_;
  absl::Status s = Exec(db_, "COMMIT", "commit");
  if (s.ok()) committed_ = true;
  return s;
}

}  // namespace coopd::sqlite_internal

// sqlite_connection.h: SqliteCache's SQLite plumbing (internal): a connection with its cached
// prepared statements, the error mapping, and small statement and transaction wrappers.
//
// Only the sqlite_cache*.cc files include this. Everything but the Connection struct lives in
// coopd::sqlite_internal, so these short names stay out of the coopd namespace.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/cache/sqlite_cache.h"

namespace coopd {

// One connection and the statements prepared on it (once each, SQLITE_PREPARE_PERSISTENT).
// Used by one thread at a time: the writer behind SqliteCache::mu_, a reader while leased.
struct SqliteCache::Connection {
  sqlite3* db = nullptr;
  // Keyed by the address of the SQL text: every statement is a string literal of one of the
  // sqlite_cache*.cc files, or an inline constant of sqlite_internal.h (one address for all).
  std::unordered_map<const char*, sqlite3_stmt*> statements;
  ~Connection() {
    for (auto& entry : statements) sqlite3_finalize(entry.second);
    sqlite3_close_v2(db);
  }
};

namespace sqlite_internal {

using Connection = SqliteCache::Connection;

// Codes for what the caller should do: a full disk is RESOURCE_EXHAUSTED (free space), a lock
// held by another process UNAVAILABLE (retry), a read-only or unopenable file
// FAILED_PRECONDITION (fix the system), an interrupt at shutdown UNAVAILABLE.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view what);

// Runs `sql` (one or more statements, no rows wanted); the error names `what`.
absl::Status Exec(sqlite3* db, const char* sql, std::string_view what);

// Opens `path` read-write (creating it when `create`), with `busy` as the busy timeout.
// FAILED_PRECONDITION with the path and SQLite's reason when it cannot be opened.
absl::StatusOr<std::unique_ptr<Connection>> OpenConnection(const std::string& path, bool create,
                                                           std::chrono::milliseconds busy);

// A statement borrowed from a connection's cache; reset (and its bindings cleared) on Reset()
// and on destruction, so it can be reused by the next caller.
class Stmt {
 public:
  Stmt(Connection& c, const char* sql);
  ~Stmt() { Reset(); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return prepare_rc_ == SQLITE_OK; }
  absl::Status status(std::string_view what) const { return SqliteError(db_, prepare_rc_, what); }
  void Reset() {
    if (stmt_ != nullptr) {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }
  }
  Stmt& Text(int i, std::string_view s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Blob(int i, std::string_view s) {
    sqlite3_bind_blob(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Int(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code (prepare errors included).
  int Step() { return ok() ? sqlite3_step(stmt_) : prepare_rc_; }
  // Runs to completion (discarding rows); the error names `what`.
  absl::Status Run(std::string_view what);
  std::string ColString(int i) { return std::string(ColView(i)); }  // text or blob
  // Valid until the next Step() or Reset().
  std::string_view ColView(int i) {
    const void* p = sqlite3_column_blob(stmt_, i);
    const int n = sqlite3_column_bytes(stmt_, i);
    return p != nullptr ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n))
                        : std::string_view();
  }
  int64_t ColInt(int i) { return sqlite3_column_int64(stmt_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int prepare_rc_ = SQLITE_OK;
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(sqlite3* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  const absl::Status& status() const { return status_; }
  absl::Status Commit();

 private:
  sqlite3* db_;
  absl::Status status_;
  bool committed_ = false;
};

}  // namespace sqlite_internal
}  // namespace coopd

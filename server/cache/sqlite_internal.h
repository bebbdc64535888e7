// sqlite_internal.h: declarations shared by SqliteCache's implementation files (internal).
//
//   sqlite_cache.cc              open, schema migration, reader pool, Get, Put, shutdown
//   sqlite_cache_maintenance.cc  deletion, eviction and its background thread, access-time
//                                flushing, Purge, Verify, Vacuum, List, FindByRequest, Stats
//   sqlite_connection.{h,cc}     Connection, SqliteError, Exec, Stmt, Transaction
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "server/cache/sqlite_cache.h"
#include "server/cache/sqlite_connection.h"

namespace coopd {

namespace sqlite_internal {

// Deletes blob ?1 unless an entry still uses it. Inline, so every file that prepares it uses one
// address (the key of Connection::statements) and a connection prepares it once.
inline constexpr char kDeleteOrphanBlob[] =
    "DELETE FROM blobs WHERE digest = ?1 AND NOT EXISTS "
    "(SELECT 1 FROM entries WHERE blob_digest = ?1)";

}  // namespace sqlite_internal

// A reader connection leased for one scope.
class SqliteCache::ReaderLease {
 public:
  explicit ReaderLease(SqliteCache* cache) : cache_(cache), conn_(cache->TakeReader(&status_)) {}
  ~ReaderLease() {
    if (conn_) cache_->ReturnReader(std::move(conn_));
  }
  ReaderLease(const ReaderLease&) = delete;
  ReaderLease& operator=(const ReaderLease&) = delete;
  bool ok() const { return conn_ != nullptr; }
  const absl::Status& status() const { return status_; }
  Connection& operator*() { return *conn_; }
  Connection* operator->() { return conn_.get(); }

 private:
  SqliteCache* const cache_;
  absl::Status status_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace coopd

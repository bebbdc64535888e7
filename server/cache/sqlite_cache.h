// sqlite_cache.h: the local-disk tier, one SQLite database file.
//
// Each value is stored as a record: magic "COOPREC1", a u32 format version, the SHA-256 of the
// payload, then the payload. Every read verifies the record; one that fails is deleted, counted
// (TierStats::corruptions) and reported as NOT_FOUND, so the caller recompiles instead of being
// served corrupt bytes.
//
// The schema version lives in PRAGMA user_version; a database newer than this binary is refused
// at Open(). The database runs in WAL mode, so readers in other processes (coopctl, sqlite3)
// never block the daemon for long.
//
// Thread-safe: one connection behind a mutex.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "server/cache/cache.h"

namespace coopd {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using SqlitePtr = std::unique_ptr<sqlite3, SqliteCloser>;

class SqliteCache final : public CacheTier {
 public:
  static constexpr int kSchemaVersion = 1;
  static constexpr uint32_t kRecordVersion = 1;

  // Opens (creating if needed, with mode 0700 for the directory) `<dir>/cache.db`.
  // FAILED_PRECONDITION with the path and reason when it cannot be opened, or when its schema
  // is newer than kSchemaVersion.
  static absl::StatusOr<std::unique_ptr<SqliteCache>> Open(const std::string& dir);

  const char* name() const override { return "disk"; }
  absl::StatusOr<std::string> Get(const std::string& key) override;
  absl::Status Put(const std::string& key, const std::string& value,
                   const EntryMeta& meta) override;
  TierStats Stats() override;
  const std::string& path() const { return path_; }

  // Record encoding, exposed for tests.
  static std::string EncodeRecord(const std::string& payload);
  // INVALID_ARGUMENT (naming the failed check) when the record is damaged.
  static absl::StatusOr<std::string> DecodeRecord(const std::string& record);

 private:
  SqliteCache(SqlitePtr db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::mutex mu_;
  SqlitePtr db_ ABSL_GUARDED_BY(mu_);
  const std::string path_;
  TierStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coopd

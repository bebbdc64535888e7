// sqlite_cache.h: the local-disk tier, one SQLite database file (WAL mode).
//
// Layout (schema version in PRAGMA user_version; a newer database is refused at Open):
//   blobs(digest PK, record, raw_bytes, stored_bytes)  -- payloads, once per content digest
//   entries(key PK, blob_digest, meta, family, dtype, arch, request_digest, components,
//           created_at, last_access, raw_bytes, stored_bytes)
// Blob and meta are stored as self-verifying records (record.h: magic, version, checksum,
// zstd). Every read verifies both and checks the blob against its digest; a record that fails
// is deleted, counted (TierStats::corruptions) and reported as NOT_FOUND, so the caller
// recompiles instead of being served corrupt bytes.
//
// Size: the stored bytes are tracked in memory (summed once in SQL at Open) and kept under a
// byte budget by a background thread that deletes least-recently-used entries in small
// batches (readers wait for one batch at most) down to 90% of the budget, then deletes blobs no
// entry references. Last-access times are recorded in memory and written in one batch by the
// same thread (about once a second) and before every eviction and at close.
//
// Degraded disk: a write that fails (disk full, read-only, I/O error) is counted, logged once
// ("serving without caching"), and the caller is still served; the next successful write logs
// that caching resumed.
//
// Thread-safe: one connection behind a mutex.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "server/cache/cache.h"

namespace coopd {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using SqlitePtr = std::unique_ptr<sqlite3, SqliteCloser>;

struct SqliteCacheOptions {
  std::string dir;                                 // holds cache.db
  uint64_t budget_bytes = uint64_t{5} << 30;       // 5 GiB
  std::chrono::milliseconds flush_interval{1000};  // last-access batching
};

class SqliteCache final : public CacheTier {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens (creating if needed) `<dir>/cache.db`, migrating older schemas. FAILED_PRECONDITION
  // with the path and reason when it cannot be opened, or its schema is newer than this binary.
  static absl::StatusOr<std::unique_ptr<SqliteCache>> Open(const SqliteCacheOptions& options);
  ~SqliteCache() override;

  const char* name() const override { return "disk"; }
  absl::StatusOr<CacheValue> Get(const std::string& key) override;
  absl::Status Put(const std::string& key, const CacheValue& value, const EntryMeta& meta) override;
  absl::StatusOr<uint64_t> Purge(const CacheFilter& filter) override;
  TierStats Stats() override;
  void ZeroStats() override;

  struct ListedEntry {
    std::string key;
    EntryMeta meta;  // family, dtype, arch
    uint64_t raw_bytes = 0;
    uint64_t stored_bytes = 0;  // the entry's meta record plus its blob's record
    int64_t created_at = 0;     // unix seconds
    int64_t last_access = 0;
  };
  // Most recently used first; at most `limit` (0: all).
  absl::StatusOr<std::vector<ListedEntry>> List(const CacheFilter& filter, size_t limit);

  struct VerifyReport {
    uint64_t entries_checked = 0;
    uint64_t blobs_checked = 0;
    uint64_t bad_removed = 0;  // entries removed (bad meta, bad or missing blob)
    std::vector<std::string> bad_keys;
  };
  // Reads and verifies every record; removes bad ones (and the entries that need them).
  absl::StatusOr<VerifyReport> Verify();

  struct VacuumReport {
    uint64_t file_bytes_before = 0;
    uint64_t file_bytes_after = 0;
  };
  absl::StatusOr<VacuumReport> Vacuum();

  struct StoredKey {
    std::string key;
    std::string components;  // serialized coop.v1.KeyComponents
    int64_t created_at = 0;
  };
  // Entries stored for one canonical request (explain), newest first.
  absl::StatusOr<std::vector<StoredKey>> FindByRequest(const std::string& request_digest);

  // Writes pending last-access times now (also done in the background and at close).
  void FlushAccessTimes();
  const std::string& path() const { return path_; }

 private:
  SqliteCache(SqlitePtr db, std::string path, SqliteCacheOptions options);
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RecomputeTotals() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushAccessTimesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes `keys`' entries, then blobs left without entries. Returns entries deleted.
  uint64_t DeleteEntriesLocked(const std::vector<std::string>& keys)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DeleteBlobAndEntriesLocked(const std::string& digest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteWriteResult(const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Background();
  bool EvictOneBatch();  // returns false when under the low-water mark

  const std::string path_;
  const SqliteCacheOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  SqlitePtr db_ ABSL_GUARDED_BY(mu_);
  TierStats stats_ ABSL_GUARDED_BY(mu_);
  uint64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t total_raw_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t entry_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::unordered_map<std::string, int64_t> pending_access_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread background_;
};

}  // namespace coopd

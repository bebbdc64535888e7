// sqlite_cache.h: the local-disk tier, one SQLite database file (WAL mode).
//
// Layout (schema version in PRAGMA user_version; a newer database is refused at Open):
//   blobs(digest PK, record, raw_bytes, stored_bytes)  -- payloads, once per content digest
//   entries(key PK, blob_digest, meta, family, dtype, arch, request_digest, components,
//           created_at, last_access, raw_bytes, stored_bytes)
//   totals(entries, entry_bytes, raw_bytes, blobs, blob_bytes)  -- one row, kept by triggers
// Blob and meta are stored as self-verifying records (record.h: magic, version, checksum,
// zstd). Every read verifies both and checks the blob against its digest (one hash per read);
// a record that fails is deleted, counted (TierStats::corruptions) and reported as NOT_FOUND,
// so the caller recompiles instead of being served corrupt bytes.
//
// Concurrency: one writer connection (behind `mu_`) and a pool of reader connections. In WAL
// mode readers never wait for the writer, so disk hits, listings and verification reads go on
// while the evictor, a purge or a vacuum writes. Statements are prepared once per connection.
//
// Size: the totals row is updated by triggers in the same transaction as every insert and
// delete, so Open reads three numbers instead of summing the file, and the totals are exact
// even when another process (a second coopd, coopd_fill) writes the same file. A background
// thread keeps the stored bytes under the budget: it deletes least-recently-used entries in
// batches sized from the average entry (at most kMaxEvictBatch per transaction) down to 90% of
// the budget, releasing the writer between batches, and deletes each victim's blob once no
// entry references it. It also writes last-access times recorded in memory (about once a
// second, before each eviction pass and at close) and re-reads the totals, so writes by other
// processes start eviction too.
//
// Degraded disk: a write that fails (disk full, read-only, I/O error) is counted, logged once
// ("serving without caching"), and the caller is still served; the next successful write logs
// that caching resumed. Maintenance (Purge, Verify, Vacuum) reports failures as errors with the
// SQLite cause: RESOURCE_EXHAUSTED for a full disk, UNAVAILABLE for a database locked by
// another process, FAILED_PRECONDITION for a read-only one.
//
// Shutdown: BeginShutdown() (also run by the destructor) stops the evictor after its current
// batch, interrupts a running VACUUM, and makes Purge and Verify stop between chunks with
// UNAVAILABLE. Each of these works in transactions, so interrupted work is rolled back or left
// half done in a consistent state; the next start resumes eviction.
//
// Thread-safe.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "server/cache/cache.h"

namespace coopd {

struct SqliteCacheOptions {
  std::string dir;                                 // holds cache.db
  uint64_t budget_bytes = uint64_t{5} << 30;       // 5 GiB
  std::chrono::milliseconds flush_interval{1000};  // last-access batching, totals refresh
  bool evict = true;  // false: never evict (coopd_fill, which writes far over any budget)
  // How long a write waits for a lock another process holds before failing with UNAVAILABLE.
  std::chrono::milliseconds busy_timeout{5000};
};

class SqliteCache final : public CacheTier {
 public:
  static constexpr int kSchemaVersion = 3;
  static constexpr int kMaxEvictBatch = 256;  // entries deleted per eviction transaction

  // Opens (creating if needed) `<dir>/cache.db`, migrating older schemas. FAILED_PRECONDITION
  // with the path and reason when it cannot be opened, or its schema is newer than this binary.
  static absl::StatusOr<std::unique_ptr<SqliteCache>> Open(const SqliteCacheOptions& options);
  ~SqliteCache() override;

  const char* name() const override { return "disk"; }
  using CacheTier::Get;
  absl::StatusOr<CacheValue> Get(const std::string& key, EntryMeta* attributes) override;
  absl::Status Put(const std::string& key, const CacheValue& value, const EntryMeta& meta) override;
  // Deletes in transactions of kMaxEvictBatch entries, releasing the writer in between.
  absl::StatusOr<uint64_t> Purge(const CacheFilter& filter) override;
  TierStats Stats() override;  // counters only: never waits for the database
  void ZeroStats() override;

  struct ListedEntry {
    std::string key;
    EntryMeta meta;  // family, dtype, arch
    uint64_t raw_bytes = 0;
    uint64_t stored_bytes = 0;  // the entry's meta record plus its blob's record
    int64_t created_at = 0;     // unix seconds
    int64_t last_access = 0;
    std::string value_meta;  // with `with_meta`: the decoded CacheValue::meta ("" if unreadable)
  };
  // Most recently used first; at most `limit` (0: all). `with_meta` also reads and decodes each
  // entry's meta record.
  absl::StatusOr<std::vector<ListedEntry>> List(const CacheFilter& filter, size_t limit,
                                                bool with_meta = false);

  struct VerifyReport {
    uint64_t entries_checked = 0;
    uint64_t blobs_checked = 0;
    uint64_t bad_removed = 0;  // entries removed (bad meta, bad or missing blob)
    std::vector<std::string> bad_keys;
    bool totals_corrected = false;  // the totals row disagreed with the tables and was rebuilt
  };
  // Reads and verifies every record (on a reader connection, a chunk at a time); removes bad
  // ones (and the entries that need them); checks the totals row against the tables.
  absl::StatusOr<VerifyReport> Verify();

  struct VacuumReport {
    uint64_t file_bytes_before = 0;
    uint64_t file_bytes_after = 0;
  };
  // Holds the writer for the whole VACUUM (readers go on); needs free space of about the
  // database's size.
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
  // Stops background eviction and interrupts long maintenance (see the file comment). Safe to
  // call from any thread, more than once.
  void BeginShutdown();
  const std::string& path() const { return path_; }
  // Eviction transactions run so far (each deletes up to kMaxEvictBatch entries).
  uint64_t eviction_batches() const { return eviction_batches_; }

  // One SQLite connection with its prepared statements (defined in sqlite_connection.h).
  struct Connection;

 private:
  SqliteCache(std::unique_ptr<Connection> writer, std::string path, SqliteCacheOptions options);
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RefreshTotalsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushAccessTimesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes `keys`' entries and the blobs they leave unreferenced, in one transaction. Returns
  // the entries deleted, or the error that rolled the transaction back.
  absl::StatusOr<uint64_t> DeleteEntriesLocked(const std::vector<std::string>& keys)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes a bad blob and every entry that uses it, in one transaction; returns those entries'
  // keys.
  absl::StatusOr<std::vector<std::string>> DeleteBlobAndEntriesLocked(const std::string& digest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteWriteResult(const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Background();
  bool EvictOneBatch();  // returns false when under the low-water mark, or stopping

  // Reader connections: leased for one read (a scope), then returned to the pool
  // (ReaderLease is defined in sqlite_internal.h).
  class ReaderLease;
  std::unique_ptr<Connection> TakeReader(absl::Status* error);
  void ReturnReader(std::unique_ptr<Connection> reader);

  const std::string path_;
  const SqliteCacheOptions options_;

  std::mutex mu_;  // the writer connection and everything written through it
  std::condition_variable cv_;
  std::unique_ptr<Connection> writer_ ABSL_GUARDED_BY(mu_);
  sqlite3* writer_db_ = nullptr;  // the writer's handle, for sqlite3_interrupt() only

  std::mutex wake_mu_;  // the background thread's wake-ups
  bool evict_requested_ ABSL_GUARDED_BY(wake_mu_) = false;

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Connection>> idle_readers_ ABSL_GUARDED_BY(readers_mu_);

  std::mutex access_mu_;
  std::unordered_map<std::string, int64_t> pending_access_ ABSL_GUARDED_BY(access_mu_);

  // Counters and totals, read by Stats() without any lock.
  std::atomic<uint64_t> hits_{0}, misses_{0}, evictions_{0}, corruptions_{0}, write_failures_{0};
  std::atomic<uint64_t> eviction_batches_{0};
  std::atomic<bool> degraded_{false}, evicting_{false};
  std::atomic<uint64_t> entry_count_{0}, total_bytes_{0}, total_raw_bytes_{0};
  std::atomic<bool> stopping_{false};  // set under wake_mu_
  std::thread background_;
};

}  // namespace coopd

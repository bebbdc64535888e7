// sqlite_cache_maintenance.cc: the disk tier's upkeep: deletion, eviction (the background
// thread), access-time flushing, Purge, Verify, Vacuum, List, FindByRequest and Stats.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <set>

#include "server/cache/record.h"
#include "server/cache/sqlite_cache.h"
#include "server/cache/sqlite_internal.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

namespace {

using sqlite_internal::Exec;
using sqlite_internal::kDeleteOrphanBlob;
using sqlite_internal::SqliteError;
using sqlite_internal::Stmt;
using sqlite_internal::Transaction;

uint64_t FileBytes(const std::string& path) {
  uint64_t total = 0;
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    auto n = std::filesystem::file_size(path + suffix, ec);
    if (!ec) total += n;
  }
  return total;
}

}  // namespace

absl::StatusOr<uint64_t> SqliteCache::DeleteEntriesLocked(const std::vector<std::string>& keys) {
  if (keys.empty()) return 0;
  Transaction txn(writer_->db);
  if (!txn.status().ok()) return txn.status();
  uint64_t deleted = 0;
  std::set<std::string> digests;
  {
    Stmt d(*writer_, "DELETE FROM entries WHERE key = ?1 RETURNING blob_digest");
    for (const auto& k : keys) {
      d.Text(1, k);
      int rc;
      while ((rc = d.Step()) == SQLITE_ROW) {
        digests.insert(d.ColString(0));
        ++deleted;
      }
      if (rc != SQLITE_DONE) return SqliteError(writer_->db, rc, "delete entry");
      d.Reset();
    }
  }
  {
    Stmt orphan(*writer_, kDeleteOrphanBlob);
    for (const auto& digest : digests) {
      if (absl::Status s = orphan.Text(1, digest).Run("delete unreferenced blob"); !s.ok()) {
        return s;
      }
      orphan.Reset();
    }
  }
  if (absl::Status s = txn.Commit(); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(access_mu_);
    for (const auto& k : keys) pending_access_.erase(k);
  }
  RefreshTotalsLocked().IgnoreError();
  return deleted;
}

absl::StatusOr<std::vector<std::string>> SqliteCache::DeleteBlobAndEntriesLocked(
    const std::string& digest) {
  Transaction txn(writer_->db);
  if (!txn.status().ok()) return txn.status();
  std::vector<std::string> keys;
  {
    Stmt d(*writer_, "DELETE FROM entries WHERE blob_digest = ?1 RETURNING key");
    d.Text(1, digest);
    int rc;
    while ((rc = d.Step()) == SQLITE_ROW) keys.push_back(d.ColString(0));
    if (rc != SQLITE_DONE) return SqliteError(writer_->db, rc, "drop entries of a bad blob");
  }
  {
    Stmt d(*writer_, "DELETE FROM blobs WHERE digest = ?1");
    if (absl::Status s = d.Text(1, digest).Run("drop a bad blob"); !s.ok()) return s;
  }
  if (absl::Status s = txn.Commit(); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(access_mu_);
    for (const auto& k : keys) pending_access_.erase(k);
  }
  RefreshTotalsLocked().IgnoreError();
  return keys;
}

void SqliteCache::FlushAccessTimes() {
  std::lock_guard<std::mutex> lock(mu_);
  FlushAccessTimesLocked();
}

void SqliteCache::FlushAccessTimesLocked() {
  std::unordered_map<std::string, int64_t> pending;
  {
    std::lock_guard<std::mutex> lock(access_mu_);
    pending.swap(pending_access_);
  }
  if (pending.empty()) return;
  // A failure (read-only disk, lock held elsewhere) drops the times: they only order eviction.
  Transaction txn(writer_->db);
  if (!txn.status().ok()) return;
  Stmt u(*writer_, "UPDATE entries SET last_access = MAX(last_access, ?2) WHERE key = ?1");
  for (const auto& [key, when] : pending) {
    if (!u.Text(1, key).Int(2, when).Run("touch").ok()) return;
    u.Reset();
  }
  txn.Commit().IgnoreError();
}

bool SqliteCache::EvictOneBatch() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t low_water = options_.budget_bytes / 10 * 9;
  const uint64_t bytes = total_bytes_, entries = entry_count_;
  if (stopping_ || !options_.evict || bytes <= low_water || entries == 0) return false;
  FlushAccessTimesLocked();  // evict by true recency
  // As many entries as should bring the store to the low-water mark, by the average entry's
  // size; the next batch corrects an estimate that fell short.
  const uint64_t average = std::max<uint64_t>(1, bytes / entries);
  const uint64_t wanted = (bytes - low_water + average - 1) / average;
  const int64_t n =
      static_cast<int64_t>(std::clamp<uint64_t>(wanted, 1, static_cast<uint64_t>(kMaxEvictBatch)));
  std::vector<std::string> victims;
  {
    Stmt q(*writer_, "SELECT key FROM entries ORDER BY last_access, created_at LIMIT ?1");
    q.Int(1, n);
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) victims.push_back(q.ColString(0));
    if (rc != SQLITE_DONE) {
      spdlog::warn("cache: eviction cannot read {}: {}", path_,
                   std::string(SqliteError(writer_->db, rc, "select victims").message()));
      return false;
    }
  }
  if (victims.empty()) return false;
  auto deleted = DeleteEntriesLocked(victims);
  if (!deleted.ok()) {
    spdlog::warn("cache: eviction failed in {}: {}; retrying in the background", path_,
                 std::string(deleted.status().message()));
    return false;
  }
  evictions_ += *deleted;
  ++eviction_batches_;
  spdlog::debug("cache: evicted {} entries; {} bytes stored (budget {})", *deleted,
                total_bytes_.load(), options_.budget_bytes);
  return *deleted > 0;
}

void SqliteCache::Background() {
  for (;;) {
    {
      std::unique_lock<std::mutex> wake(wake_mu_);
      cv_.wait_for(wake, options_.flush_interval, [&] { return stopping_ || evict_requested_; });
      evict_requested_ = false;
      if (stopping_) return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      FlushAccessTimesLocked();
      // Another process writing the same file (a second coopd, coopd_fill) moves the totals.
      RefreshTotalsLocked().IgnoreError();
    }
    if (!options_.evict || total_bytes_ <= options_.budget_bytes) continue;
    const auto start = std::chrono::steady_clock::now();
    const uint64_t before_entries = entry_count_, before_bytes = total_bytes_;
    const uint64_t before_evictions = evictions_;
    spdlog::info(
        "cache: {} MiB stored, over the {} MiB budget: evicting least recently used "
        "entries down to 90%",
        before_bytes >> 20, options_.budget_bytes >> 20);
    evicting_ = true;
    while (EvictOneBatch()) {
    }
    evicting_ = false;
    spdlog::info(
        "cache: evicted {} of {} entries in {:.0f} ms; {} MiB stored{}",
        evictions_ - before_evictions, before_entries,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
        total_bytes_ >> 20, stopping_ ? " (stopped for shutdown; resumes at next start)" : "");
  }
}

absl::StatusOr<uint64_t> SqliteCache::Purge(const CacheFilter& filter) {
  // The matching keys, read without the writer; then deleted a batch per transaction.
  std::vector<std::string> keys;
  {
    ReaderLease reader(this);
    if (!reader.ok()) return reader.status();
    Stmt q(*reader,
           "SELECT key FROM entries WHERE (?1 = '' OR family = ?1) AND (?2 = '' OR dtype = ?2) "
           "AND (?3 = '' OR arch = ?3)");
    q.Text(1, filter.family).Text(2, filter.dtype).Text(3, filter.arch);
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) keys.push_back(q.ColString(0));
    if (rc != SQLITE_DONE) return SqliteError(reader->db, rc, "purge: select entries");
  }
  uint64_t removed = 0;
  for (size_t i = 0; i < keys.size(); i += kMaxEvictBatch) {
    const auto fail = [&](const absl::Status& s) {
      return absl::Status(s.code(), StrCat("purge: removed ", removed, " of ", keys.size(),
                                           " matching entries, then: ", s.message()));
    };
    if (stopping_) {
      return fail(absl::UnavailableError("coopd is shutting down; run purge again"));
    }
    std::vector<std::string> batch(
        keys.begin() + static_cast<std::ptrdiff_t>(i),
        keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + kMaxEvictBatch)));
    std::lock_guard<std::mutex> lock(mu_);
    auto n = DeleteEntriesLocked(batch);
    if (!n.ok() && absl::IsResourceExhausted(n.status())) {
      // A delete needs room in the WAL; a checkpoint that truncates it may make that room.
      Exec(writer_->db, "PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint").IgnoreError();
      n = DeleteEntriesLocked(batch);
    }
    if (!n.ok()) return fail(n.status());
    removed += *n;
  }
  return removed;
}

TierStats SqliteCache::Stats() {
  TierStats s;
  s.hits = hits_;
  s.misses = misses_;
  s.evictions = evictions_;
  s.corruptions = corruptions_;
  s.write_failures = write_failures_;
  s.degraded = degraded_;
  s.evicting = evicting_;
  s.entries = entry_count_;
  s.bytes = total_bytes_;
  s.raw_bytes = total_raw_bytes_;
  s.budget_bytes = options_.budget_bytes;
  return s;
}

void SqliteCache::ZeroStats() {
  for (auto* c : {&hits_, &misses_, &evictions_, &corruptions_, &write_failures_}) *c = 0;
}

absl::StatusOr<std::vector<SqliteCache::ListedEntry>> SqliteCache::List(const CacheFilter& filter,
                                                                        size_t limit,
                                                                        bool with_meta) {
  FlushAccessTimes();
  ReaderLease reader(this);
  if (!reader.ok()) return reader.status();
  Stmt q(
      *reader,
      "SELECT e.key, e.family, e.dtype, e.arch, e.raw_bytes, "
      "e.stored_bytes + COALESCE(b.stored_bytes, 0), e.created_at, e.last_access, "
      "CASE WHEN ?5 THEN e.meta END FROM entries e LEFT JOIN blobs b ON b.digest = e.blob_digest "
      "WHERE (?1 = '' OR e.family = ?1) AND (?2 = '' OR e.dtype = ?2) "
      "AND (?3 = '' OR e.arch = ?3) ORDER BY e.last_access DESC, e.created_at DESC LIMIT ?4");
  if (!q.ok()) return q.status("list");
  q.Text(1, filter.family).Text(2, filter.dtype).Text(3, filter.arch);
  q.Int(4, limit == 0 ? -1 : static_cast<int64_t>(limit)).Int(5, with_meta ? 1 : 0);
  std::vector<ListedEntry> out;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    ListedEntry e;
    e.key = q.ColString(0);
    e.meta.family = q.ColString(1);
    e.meta.dtype = q.ColString(2);
    e.meta.arch = q.ColString(3);
    e.raw_bytes = static_cast<uint64_t>(q.ColInt(4));
    e.stored_bytes = static_cast<uint64_t>(q.ColInt(5));
    e.created_at = q.ColInt(6) / 1000;
    e.last_access = q.ColInt(7) / 1000;
    if (with_meta) {
      // A bad record is verify's business; the listing just carries no meta for it.
      auto meta = DecodeRecord(q.ColView(8));
      if (meta.ok()) e.value_meta = std::move(*meta);
    }
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return SqliteError(reader->db, rc, "list");
  return out;
}

absl::StatusOr<SqliteCache::VerifyReport> SqliteCache::Verify() {
  VerifyReport report;
  const auto interrupted = [&](const char* phase) {
    return absl::UnavailableError(
        StrCat("verify: coopd is shutting down (", phase, ": ", report.blobs_checked, " blobs and ",
               report.entries_checked, " entries checked); run verify again"));
  };
  // Blobs, in digest order, a chunk at a time on a reader: decoding (zstd and SHA-256) never
  // holds the writer. Bad ones are deleted through the writer, with the entries that use them.
  std::string after;
  for (;;) {
    if (stopping_) return interrupted("blobs");
    std::vector<std::string> bad;
    int rows = 0;
    {
      ReaderLease reader(this);
      if (!reader.ok()) return reader.status();
      Stmt q(*reader,
             "SELECT digest, record FROM blobs WHERE digest > ?1 ORDER BY digest LIMIT 32");
      q.Text(1, after);
      int rc;
      while ((rc = q.Step()) == SQLITE_ROW) {
        ++rows;
        after = q.ColString(0);
        std::array<uint8_t, 32> sha{};
        auto payload = DecodeRecord(q.ColView(1), &sha);
        ++report.blobs_checked;
        if (!payload.ok() || ToHex(sha.data(), sha.size()) != after) bad.push_back(after);
      }
      if (rc != SQLITE_DONE) return SqliteError(reader->db, rc, "verify: read blobs");
    }
    for (const auto& digest : bad) {
      std::lock_guard<std::mutex> lock(mu_);
      ++corruptions_;
      auto keys = DeleteBlobAndEntriesLocked(digest);
      if (!keys.ok()) {
        return absl::Status(keys.status().code(),
                            StrCat("verify: cannot remove bad blob ", digest.substr(0, 16), ": ",
                                   keys.status().message()));
      }
      report.bad_keys.insert(report.bad_keys.end(), keys->begin(), keys->end());
    }
    if (rows == 0) break;
  }
  // Entries: their meta records, and that their blob exists.
  after.clear();
  for (;;) {
    if (stopping_) return interrupted("entries");
    std::vector<std::string> bad;
    int rows = 0;
    {
      ReaderLease reader(this);
      if (!reader.ok()) return reader.status();
      Stmt q(*reader,
             "SELECT e.key, e.meta, b.digest IS NOT NULL FROM entries e LEFT JOIN blobs b "
             "ON b.digest = e.blob_digest WHERE e.key > ?1 ORDER BY e.key LIMIT 256");
      q.Text(1, after);
      int rc;
      while ((rc = q.Step()) == SQLITE_ROW) {
        ++rows;
        after = q.ColString(0);
        ++report.entries_checked;
        if (!DecodeRecord(q.ColView(1)).ok() || q.ColInt(2) == 0) bad.push_back(after);
      }
      if (rc != SQLITE_DONE) return SqliteError(reader->db, rc, "verify: read entries");
    }
    if (!bad.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      auto n = DeleteEntriesLocked(bad);
      if (!n.ok()) {
        return absl::Status(n.status().code(), StrCat("verify: cannot remove ", bad.size(),
                                                      " bad entries: ", n.status().message()));
      }
      corruptions_ += bad.size();
      report.bad_keys.insert(report.bad_keys.end(), bad.begin(), bad.end());
    }
    if (rows == 0) break;
  }
  // The totals row against the tables, in one write transaction (a consistent snapshot that no
  // other writer can move). Cheap: the sums come from indexes and the small entry rows.
  {
    std::lock_guard<std::mutex> lock(mu_);
    Transaction txn(writer_->db);
    if (!txn.status().ok()) return txn.status();
    Stmt q(*writer_,
           "SELECT (SELECT COUNT(*) FROM entries) = t.entries AND "
           "(SELECT COALESCE(SUM(stored_bytes), 0) FROM entries) = t.entry_bytes AND "
           "(SELECT COALESCE(SUM(raw_bytes), 0) FROM entries) = t.raw_bytes AND "
           "(SELECT COUNT(*) FROM blobs) = t.blobs AND "
           "(SELECT COALESCE(SUM(stored_bytes), 0) FROM blobs) = t.blob_bytes "
           "FROM totals t WHERE t.id = 0");
    int rc = q.Step();
    if (rc != SQLITE_ROW) return SqliteError(writer_->db, rc, "verify: check totals");
    const bool consistent = q.ColInt(0) != 0;
    q.Reset();
    if (!consistent) {
      Stmt fix(*writer_,
               "UPDATE totals SET entries = (SELECT COUNT(*) FROM entries), "
               "entry_bytes = (SELECT COALESCE(SUM(stored_bytes), 0) FROM entries), "
               "raw_bytes = (SELECT COALESCE(SUM(raw_bytes), 0) FROM entries), "
               "blobs = (SELECT COUNT(*) FROM blobs), "
               "blob_bytes = (SELECT COALESCE(SUM(stored_bytes), 0) FROM blobs) WHERE id = 0");
      if (absl::Status s = fix.Run("verify: rebuild totals"); !s.ok()) return s;
      report.totals_corrected = true;
      spdlog::warn("cache: the totals row of {} disagreed with its tables; rebuilt", path_);
    }
    if (absl::Status s = txn.Commit(); !s.ok()) return s;
    RefreshTotalsLocked().IgnoreError();
  }
  report.bad_removed = report.bad_keys.size();
  return report;
}

absl::StatusOr<SqliteCache::VacuumReport> SqliteCache::Vacuum() {
  if (stopping_) return absl::UnavailableError("vacuum: coopd is shutting down");
  std::lock_guard<std::mutex> lock(mu_);
  FlushAccessTimesLocked();
  VacuumReport report;
  report.file_bytes_before = FileBytes(path_);
  if (absl::Status s = Exec(writer_->db, "VACUUM", "vacuum"); !s.ok()) {
    if (absl::IsResourceExhausted(s)) {
      return absl::ResourceExhaustedError(StrCat(
          "vacuum: ", s.message(), "; VACUUM needs free space of about the database's size (",
          report.file_bytes_before >> 20, " MiB)"));
    }
    return absl::Status(s.code(), StrCat("vacuum: ", s.message()));
  }
  if (absl::Status s = Exec(writer_->db, "PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint");
      !s.ok()) {
    return absl::Status(s.code(), StrCat("vacuum: ", s.message()));
  }
  report.file_bytes_after = FileBytes(path_);
  return report;
}

absl::StatusOr<std::vector<SqliteCache::StoredKey>> SqliteCache::FindByRequest(
    const std::string& request_digest) {
  ReaderLease reader(this);
  if (!reader.ok()) return reader.status();
  Stmt q(*reader,
         "SELECT key, components, created_at FROM entries WHERE request_digest = ?1 "
         "ORDER BY created_at DESC LIMIT 16");
  q.Text(1, request_digest);
  std::vector<StoredKey> out;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    out.push_back({q.ColString(0), q.ColString(1), q.ColInt(2) / 1000});
  }
  if (rc != SQLITE_DONE) return SqliteError(reader->db, rc, "find");
  return out;
}

}  // namespace coopd

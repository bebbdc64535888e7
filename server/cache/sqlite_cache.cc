#include "server/cache/sqlite_cache.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "server/cache/record.h"
#include "server/sha256.h"
#include "server/strings.h"

namespace coopd {
namespace {

struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR, SQLITE_BUSY: the disk is the problem, not the
// request; UNAVAILABLE.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string msg =
      StrCat("sqlite: ", what, ": ", sqlite3_errmsg(db), " (", sqlite3_errstr(rc), ")");
  const int primary = rc & 0xff;
  if (primary == SQLITE_FULL || primary == SQLITE_READONLY || primary == SQLITE_IOERR ||
      primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_CANTOPEN) {
    return absl::UnavailableError(msg);
  }
  return absl::InternalError(msg);
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    sqlite3_stmt* raw = nullptr;
    rc_ = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
    stmt_.reset(raw);
  }
  bool ok() const { return rc_ == SQLITE_OK; }
  absl::Status status(std::string_view what) const { return SqliteError(db_, rc_, what); }
  Stmt& Text(int i, const std::string& s) {
    sqlite3_bind_text(stmt_.get(), i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Blob(int i, const std::string& s) {
    sqlite3_bind_blob(stmt_.get(), i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Int(int i, int64_t v) {
    sqlite3_bind_int64(stmt_.get(), i, v);
    return *this;
  }
  int Step() { return rc_ = sqlite3_step(stmt_.get()); }
  absl::Status Run(std::string_view what) {
    if (!ok()) return status(what);
    int rc = Step();
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqliteError(db_, rc, what);
    return absl::OkStatus();
  }
  std::string ColText(int i) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i))) : "";
  }
  std::string ColBlob(int i) {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_.get(), i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i))) : "";
  }
  int64_t ColInt(int i) { return sqlite3_column_int64(stmt_.get(), i); }

 private:
  sqlite3* db_;
  StmtPtr stmt_;
  int rc_ = SQLITE_OK;
};

// Entry timestamps are unix milliseconds: LRU order must separate entries written within one
// second of each other.
int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t FileBytes(const std::string& path) {
  uint64_t total = 0;
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    auto n = std::filesystem::file_size(path + suffix, ec);
    if (!ec) total += n;
  }
  return total;
}

constexpr char kSchemaV2[] =
    "CREATE TABLE blobs("
    "  digest TEXT PRIMARY KEY,"
    "  record BLOB NOT NULL,"
    "  raw_bytes INTEGER NOT NULL,"
    "  stored_bytes INTEGER NOT NULL);"
    "CREATE TABLE entries("
    "  key TEXT PRIMARY KEY,"
    "  blob_digest TEXT NOT NULL,"
    "  meta BLOB NOT NULL,"
    "  family TEXT NOT NULL,"
    "  dtype TEXT NOT NULL,"
    "  arch TEXT NOT NULL,"
    "  request_digest TEXT NOT NULL,"
    "  components BLOB NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  last_access INTEGER NOT NULL,"
    "  raw_bytes INTEGER NOT NULL,"
    "  stored_bytes INTEGER NOT NULL);"
    "CREATE INDEX entries_by_access ON entries(last_access);"
    "CREATE INDEX entries_by_request ON entries(request_digest);"
    "CREATE INDEX entries_by_blob ON entries(blob_digest);";

}  // namespace

SqliteCache::SqliteCache(SqlitePtr db, std::string path, SqliteCacheOptions options)
    : path_(std::move(path)), options_(std::move(options)), db_(std::move(db)) {}

SqliteCache::~SqliteCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (background_.joinable()) background_.join();
  std::lock_guard<std::mutex> lock(mu_);
  FlushAccessTimesLocked();
}

absl::StatusOr<std::unique_ptr<SqliteCache>> SqliteCache::Open(const SqliteCacheOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        StrCat("cache: cannot create cache directory ", options.dir, ": ", ec.message()));
  }
  const std::string path = (std::filesystem::path(options.dir) / "cache.db").string();
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  SqlitePtr db(raw);
  if (rc != SQLITE_OK) {
    return absl::FailedPreconditionError(
        StrCat("cache: cannot open ", path, ": ", raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(db.get(), 5000);
  std::unique_ptr<SqliteCache> cache(new SqliteCache(std::move(db), path, options));
  {
    std::lock_guard<std::mutex> lock(cache->mu_);
    absl::Status s = cache->Exec("PRAGMA journal_mode=WAL");
    if (s.ok()) s = cache->Exec("PRAGMA synchronous=NORMAL");
    if (s.ok()) s = cache->Migrate();
    if (s.ok()) s = cache->RecomputeTotals();
    if (!s.ok()) {
      return absl::FailedPreconditionError(StrCat("cache: ", path, ": ", s.message()));
    }
    cache->stats_.budget_bytes = options.budget_bytes;
  }
  cache->background_ = std::thread([c = cache.get()] { c->Background(); });
  return cache;
}

absl::Status SqliteCache::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return SqliteError(db_.get(), rc, msg);
  }
  return absl::OkStatus();
}

absl::Status SqliteCache::Migrate() {
  int version = 0;
  {
    // Scoped: an unfinalized statement would lock the tables the migration drops.
    Stmt version_stmt(db_.get(), "PRAGMA user_version");
    if (!version_stmt.ok() || version_stmt.Step() != SQLITE_ROW) {
      return version_stmt.status("read schema version");
    }
    version = static_cast<int>(version_stmt.ColInt(0));
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        StrCat("schema version ", version, " is newer than this coopd supports (", kSchemaVersion,
               "); run a newer coopd or choose another --cache-dir"));
  }
  if (version == kSchemaVersion) return absl::OkStatus();
  // Each step runs in one transaction: a crash mid-migration leaves the old version intact.
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::Status s;
  if (version == 1) {
    // Schema 1 stored whole artifacts uncompressed, one per key. Its entries are rebuildable
    // (they are recompiled on demand), so the migration drops them rather than converting.
    spdlog::info("cache: migrating {} from schema 1 to 2 (old entries are discarded)", path_);
    s = Exec("DROP TABLE IF EXISTS entries");
  }
  if (s.ok()) s = Exec(kSchemaV2);
  if (s.ok()) s = Exec(StrCat("PRAGMA user_version=", kSchemaVersion).c_str());
  if (s.ok()) s = Exec("COMMIT");
  if (!s.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return absl::FailedPreconditionError(StrCat("cannot create schema: ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status SqliteCache::RecomputeTotals() {
  Stmt blobs(db_.get(), "SELECT COALESCE(SUM(stored_bytes), 0) FROM blobs");
  Stmt entries(db_.get(),
               "SELECT COUNT(*), COALESCE(SUM(stored_bytes), 0), COALESCE(SUM(raw_bytes), 0) "
               "FROM entries");
  if (!blobs.ok() || blobs.Step() != SQLITE_ROW) return blobs.status("sum blobs");
  if (!entries.ok() || entries.Step() != SQLITE_ROW) return entries.status("sum entries");
  entry_count_ = static_cast<uint64_t>(entries.ColInt(0));
  total_bytes_ = static_cast<uint64_t>(blobs.ColInt(0) + entries.ColInt(1));
  total_raw_bytes_ = static_cast<uint64_t>(entries.ColInt(2));
  return absl::OkStatus();
}

void SqliteCache::DeleteBlobAndEntriesLocked(const std::string& digest) {
  Stmt(db_.get(), "DELETE FROM entries WHERE blob_digest = ?1")
      .Text(1, digest)
      .Run("drop")
      .IgnoreError();
  Stmt(db_.get(), "DELETE FROM blobs WHERE digest = ?1").Text(1, digest).Run("drop").IgnoreError();
  RecomputeTotals().IgnoreError();
}

absl::StatusOr<CacheValue> SqliteCache::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_.get(),
         "SELECT e.meta, e.blob_digest, b.record FROM entries e LEFT JOIN blobs b "
         "ON b.digest = e.blob_digest WHERE e.key = ?1");
  if (!q.ok()) return q.status("read");
  q.Text(1, key);
  int rc = q.Step();
  if (rc == SQLITE_DONE) {
    ++stats_.misses;
    return absl::NotFoundError("disk: no entry");
  }
  if (rc != SQLITE_ROW) return SqliteError(db_.get(), rc, "read");
  const std::string meta_record = q.ColBlob(0);
  const std::string digest = q.ColText(1);
  const std::string blob_record = q.ColBlob(2);

  auto meta = DecodeRecord(meta_record);
  absl::StatusOr<std::string> blob = absl::DataLossError("record: blob missing");
  if (!blob_record.empty()) blob = DecodeRecord(blob_record);
  if (blob.ok() && Sha256::Hex(*blob) != digest) {
    blob = absl::DataLossError("record: blob does not match its digest");
  }
  if (!meta.ok() || !blob.ok()) {
    ++stats_.corruptions;
    ++stats_.misses;
    const absl::Status why = !blob.ok() ? blob.status() : meta.status();
    spdlog::error("cache: dropped damaged entry {} ({}); it will be recompiled", key.substr(0, 16),
                  std::string(why.message()));
    if (!blob.ok()) {
      DeleteBlobAndEntriesLocked(digest);  // every entry sharing a bad blob is bad
    } else {
      DeleteEntriesLocked({key});
    }
    return absl::NotFoundError(StrCat("disk: dropped a damaged record (", why.message(), ")"));
  }
  ++stats_.hits;
  pending_access_[key] = NowMillis();
  return CacheValue{std::move(*meta), std::move(*blob)};
}

void SqliteCache::NoteWriteResult(const absl::Status& s) {
  if (s.ok()) {
    if (stats_.degraded) {
      spdlog::info("cache: {} is writable again; caching resumed", path_);
      stats_.degraded = false;
    }
    return;
  }
  ++stats_.write_failures;
  if (!stats_.degraded) {
    spdlog::warn("cache: cannot store in {} ({}); serving without caching until it is writable",
                 path_, std::string(s.message()));
    stats_.degraded = true;
  }
}

absl::Status SqliteCache::Put(const std::string& key, const CacheValue& value,
                              const EntryMeta& meta) {
  const std::string digest = Sha256::Hex(value.blob);
  const std::string blob_record = EncodeRecord(value.blob);
  const std::string meta_record = EncodeRecord(value.meta);
  const int64_t now = NowMillis();
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status s = Exec("BEGIN IMMEDIATE");
  bool blob_added = false;
  if (s.ok()) {
    Stmt ins(db_.get(),
             "INSERT OR IGNORE INTO blobs(digest, record, raw_bytes, stored_bytes) "
             "VALUES(?1, ?2, ?3, ?4)");
    s = ins.Text(1, digest)
            .Blob(2, blob_record)
            .Int(3, static_cast<int64_t>(value.blob.size()))
            .Int(4, static_cast<int64_t>(blob_record.size()))
            .Run("store blob");
    blob_added = s.ok() && sqlite3_changes(db_.get()) > 0;
  }
  // The entry this write replaces, if any, for the running totals.
  bool replaced = false;
  int64_t old_raw = 0, old_stored = 0;
  if (s.ok()) {
    Stmt old(db_.get(), "SELECT raw_bytes, stored_bytes FROM entries WHERE key = ?1");
    if (!old.ok()) s = old.status("read entry");
    if (s.ok() && old.Text(1, key).Step() == SQLITE_ROW) {
      replaced = true;
      old_raw = old.ColInt(0);
      old_stored = old.ColInt(1);
    }
  }
  const uint64_t raw = value.meta.size() + value.blob.size();
  if (s.ok()) {
    Stmt ins(db_.get(),
             "INSERT OR REPLACE INTO entries(key, blob_digest, meta, family, dtype, arch, "
             "request_digest, components, created_at, last_access, raw_bytes, stored_bytes) "
             "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11)");
    s = ins.Text(1, key)
            .Text(2, digest)
            .Blob(3, meta_record)
            .Text(4, meta.family)
            .Text(5, meta.dtype)
            .Text(6, meta.arch)
            .Text(7, meta.request_digest)
            .Blob(8, meta.components)
            .Int(9, now)
            .Int(10, static_cast<int64_t>(raw))
            .Int(11, static_cast<int64_t>(meta_record.size()))
            .Run("store entry");
  }
  if (s.ok()) s = Exec("COMMIT");
  if (!s.ok()) {
    Exec("ROLLBACK").IgnoreError();
    NoteWriteResult(s);
    return s;
  }
  NoteWriteResult(s);
  // Keep the totals by difference (no table scan per write). A blob left without entries by a
  // replacement still counts until the evictor deletes orphans, as RecomputeTotals() would.
  total_bytes_ += (blob_added ? blob_record.size() : 0) + meta_record.size();
  total_bytes_ -= static_cast<uint64_t>(old_stored);
  total_raw_bytes_ += raw - static_cast<uint64_t>(old_raw);
  if (!replaced) ++entry_count_;
  if (total_bytes_ > options_.budget_bytes) cv_.notify_all();
  return absl::OkStatus();
}

void SqliteCache::FlushAccessTimes() {
  std::lock_guard<std::mutex> lock(mu_);
  FlushAccessTimesLocked();
}

void SqliteCache::FlushAccessTimesLocked() {
  if (pending_access_.empty()) return;
  if (!Exec("BEGIN").ok()) return;
  for (const auto& [key, when] : pending_access_) {
    Stmt u(db_.get(), "UPDATE entries SET last_access = MAX(last_access, ?2) WHERE key = ?1");
    u.Text(1, key).Int(2, when).Run("touch").IgnoreError();
  }
  if (Exec("COMMIT").ok()) {
    pending_access_.clear();
  } else {
    Exec("ROLLBACK").IgnoreError();  // read-only disk: keep serving; times stay approximate
    pending_access_.clear();
  }
}

uint64_t SqliteCache::DeleteEntriesLocked(const std::vector<std::string>& keys) {
  if (keys.empty()) return 0;
  if (!Exec("BEGIN IMMEDIATE").ok()) return 0;
  uint64_t deleted = 0;
  for (const auto& k : keys) {
    Stmt d(db_.get(), "DELETE FROM entries WHERE key = ?1");
    if (d.Text(1, k).Run("delete").ok())
      deleted += static_cast<uint64_t>(sqlite3_changes(db_.get()));
    pending_access_.erase(k);
  }
  Stmt orphans(db_.get(),
               "DELETE FROM blobs WHERE NOT EXISTS "
               "(SELECT 1 FROM entries WHERE entries.blob_digest = blobs.digest)");
  orphans.Run("delete orphan blobs").IgnoreError();
  if (!Exec("COMMIT").ok()) {
    Exec("ROLLBACK").IgnoreError();
    return 0;
  }
  RecomputeTotals().IgnoreError();
  return deleted;
}

bool SqliteCache::EvictOneBatch() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t low_water = options_.budget_bytes / 10 * 9;
  if (total_bytes_ <= low_water || (stopping_ && total_bytes_ <= options_.budget_bytes)) {
    return false;
  }
  FlushAccessTimesLocked();  // evict by true recency
  Stmt q(db_.get(), "SELECT key FROM entries ORDER BY last_access ASC, created_at ASC LIMIT 16");
  std::vector<std::string> victims;
  while (q.ok() && q.Step() == SQLITE_ROW) victims.push_back(q.ColText(0));
  if (victims.empty()) return false;
  const uint64_t n = DeleteEntriesLocked(victims);
  stats_.evictions += n;
  spdlog::debug("cache: evicted {} entries; {} bytes stored (budget {})", n, total_bytes_,
                options_.budget_bytes);
  return n > 0;
}

void SqliteCache::Background() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, options_.flush_interval,
                   [&] { return stopping_ || total_bytes_ > options_.budget_bytes; });
      if (stopping_) return;
      FlushAccessTimesLocked();
    }
    // Evict in small batches, letting readers in between.
    while (EvictOneBatch()) {
    }
  }
}

absl::StatusOr<uint64_t> SqliteCache::Purge(const CacheFilter& filter) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_.get(),
         "SELECT key FROM entries WHERE (?1 = '' OR family = ?1) AND (?2 = '' OR dtype = ?2) "
         "AND (?3 = '' OR arch = ?3)");
  if (!q.ok()) return q.status("purge");
  q.Text(1, filter.family).Text(2, filter.dtype).Text(3, filter.arch);
  std::vector<std::string> keys;
  while (q.Step() == SQLITE_ROW) keys.push_back(q.ColText(0));
  return DeleteEntriesLocked(keys);
}

TierStats SqliteCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  TierStats s = stats_;
  s.entries = entry_count_;
  s.bytes = total_bytes_;
  s.raw_bytes = total_raw_bytes_;
  s.budget_bytes = options_.budget_bytes;
  return s;
}

void SqliteCache::ZeroStats() {
  std::lock_guard<std::mutex> lock(mu_);
  const bool degraded = stats_.degraded;
  stats_ = TierStats{};
  stats_.degraded = degraded;
}

absl::StatusOr<std::vector<SqliteCache::ListedEntry>> SqliteCache::List(const CacheFilter& filter,
                                                                        size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushAccessTimesLocked();
  Stmt q(db_.get(),
         "SELECT e.key, e.family, e.dtype, e.arch, e.raw_bytes, "
         "e.stored_bytes + COALESCE(b.stored_bytes, 0), e.created_at, e.last_access "
         "FROM entries e LEFT JOIN blobs b ON b.digest = e.blob_digest "
         "WHERE (?1 = '' OR e.family = ?1) AND (?2 = '' OR e.dtype = ?2) "
         "AND (?3 = '' OR e.arch = ?3) ORDER BY e.last_access DESC, e.created_at DESC LIMIT ?4");
  if (!q.ok()) return q.status("list");
  q.Text(1, filter.family).Text(2, filter.dtype).Text(3, filter.arch);
  q.Int(4, limit == 0 ? -1 : static_cast<int64_t>(limit));
  std::vector<ListedEntry> out;
  while (q.Step() == SQLITE_ROW) {
    ListedEntry e;
    e.key = q.ColText(0);
    e.meta.family = q.ColText(1);
    e.meta.dtype = q.ColText(2);
    e.meta.arch = q.ColText(3);
    e.raw_bytes = static_cast<uint64_t>(q.ColInt(4));
    e.stored_bytes = static_cast<uint64_t>(q.ColInt(5));
    e.created_at = q.ColInt(6) / 1000;
    e.last_access = q.ColInt(7) / 1000;
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<SqliteCache::VerifyReport> SqliteCache::Verify() {
  VerifyReport report;
  // Blobs, in digest order, a chunk at a time so requests are served in between.
  std::string after;
  for (;;) {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt q(db_.get(),
           "SELECT digest, record FROM blobs WHERE digest > ?1 ORDER BY digest LIMIT 32");
    if (!q.ok()) return q.status("verify");
    q.Text(1, after);
    std::vector<std::string> bad;
    int rows = 0;
    while (q.Step() == SQLITE_ROW) {
      ++rows;
      after = q.ColText(0);
      auto payload = DecodeRecord(q.ColBlob(1));
      ++report.blobs_checked;
      if (!payload.ok() || Sha256::Hex(*payload) != after) bad.push_back(after);
    }
    for (const auto& digest : bad) {
      Stmt k(db_.get(), "SELECT key FROM entries WHERE blob_digest = ?1");
      k.Text(1, digest);
      while (k.Step() == SQLITE_ROW) report.bad_keys.push_back(k.ColText(0));
      ++stats_.corruptions;
      DeleteBlobAndEntriesLocked(digest);
    }
    if (rows == 0) break;
  }
  // Entries: their meta records, and that their blob exists.
  after.clear();
  for (;;) {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt q(db_.get(),
           "SELECT e.key, e.meta, b.digest IS NOT NULL FROM entries e LEFT JOIN blobs b "
           "ON b.digest = e.blob_digest WHERE e.key > ?1 ORDER BY e.key LIMIT 64");
    if (!q.ok()) return q.status("verify");
    q.Text(1, after);
    std::vector<std::string> bad;
    int rows = 0;
    while (q.Step() == SQLITE_ROW) {
      ++rows;
      after = q.ColText(0);
      ++report.entries_checked;
      if (!DecodeRecord(q.ColBlob(1)).ok() || q.ColInt(2) == 0) bad.push_back(after);
    }
    stats_.corruptions += bad.size();
    DeleteEntriesLocked(bad);
    report.bad_keys.insert(report.bad_keys.end(), bad.begin(), bad.end());
    if (rows == 0) break;
  }
  report.bad_removed = report.bad_keys.size();
  return report;
}

absl::StatusOr<SqliteCache::VacuumReport> SqliteCache::Vacuum() {
  std::lock_guard<std::mutex> lock(mu_);
  FlushAccessTimesLocked();
  VacuumReport report;
  report.file_bytes_before = FileBytes(path_);
  if (absl::Status s = Exec("VACUUM"); !s.ok()) return s;
  if (absl::Status s = Exec("PRAGMA wal_checkpoint(TRUNCATE)"); !s.ok()) return s;
  report.file_bytes_after = FileBytes(path_);
  return report;
}

absl::StatusOr<std::vector<SqliteCache::StoredKey>> SqliteCache::FindByRequest(
    const std::string& request_digest) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_.get(),
         "SELECT key, components, created_at FROM entries WHERE request_digest = ?1 "
         "ORDER BY created_at DESC LIMIT 16");
  if (!q.ok()) return q.status("find");
  q.Text(1, request_digest);
  std::vector<StoredKey> out;
  while (q.Step() == SQLITE_ROW) out.push_back({q.ColText(0), q.ColBlob(1), q.ColInt(2) / 1000});
  return out;
}

}  // namespace coopd

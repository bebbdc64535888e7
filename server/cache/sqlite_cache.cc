// sqlite_cache.cc: the local-disk cache tier: open, schema migration, reader pool, Get, Put.
#include "server/cache/sqlite_cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "server/cache/record.h"
#include "server/cache/sqlite_internal.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

namespace {

using sqlite_internal::Connection;
using sqlite_internal::Exec;
using sqlite_internal::kDeleteOrphanBlob;
using sqlite_internal::OpenConnection;
using sqlite_internal::SqliteError;
using sqlite_internal::Stmt;
using sqlite_internal::Transaction;

// Entry timestamps are unix milliseconds: LRU order must separate entries written within one
// second of each other.
int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The tables of every schema version since 2 (the index on last_access gained created_at, the
// LRU tie-break, in version 3).
constexpr char kCreateTables[] =
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
    "CREATE INDEX entries_by_access ON entries(last_access, created_at);"
    "CREATE INDEX entries_by_request ON entries(request_digest);"
    "CREATE INDEX entries_by_blob ON entries(blob_digest);";

// Schema 3: the totals row and the triggers that keep it, in the transaction of every change.
// blobs_by_size covers SUM(stored_bytes) so the totals can be checked without reading records
// (the column sits after the ~135 KB record). The INSERT computes the totals of whatever the
// tables hold (once, at migration). Entries are written with an upsert, never INSERT OR
// REPLACE, whose implicit delete would not fire the delete trigger.
constexpr char kCreateTotals[] =
    "CREATE INDEX blobs_by_size ON blobs(stored_bytes);"
    "CREATE TABLE totals("
    "  id INTEGER PRIMARY KEY CHECK (id = 0),"
    "  entries INTEGER NOT NULL,"
    "  entry_bytes INTEGER NOT NULL,"
    "  raw_bytes INTEGER NOT NULL,"
    "  blobs INTEGER NOT NULL,"
    "  blob_bytes INTEGER NOT NULL);"
    "INSERT INTO totals SELECT 0,"
    "  (SELECT COUNT(*) FROM entries), (SELECT COALESCE(SUM(stored_bytes), 0) FROM entries),"
    "  (SELECT COALESCE(SUM(raw_bytes), 0) FROM entries), (SELECT COUNT(*) FROM blobs),"
    "  (SELECT COALESCE(SUM(stored_bytes), 0) FROM blobs);"
    "CREATE TRIGGER entries_insert AFTER INSERT ON entries BEGIN"
    "  UPDATE totals SET entries = entries + 1, entry_bytes = entry_bytes + NEW.stored_bytes,"
    "    raw_bytes = raw_bytes + NEW.raw_bytes WHERE id = 0; END;"
    "CREATE TRIGGER entries_delete AFTER DELETE ON entries BEGIN"
    "  UPDATE totals SET entries = entries - 1, entry_bytes = entry_bytes - OLD.stored_bytes,"
    "    raw_bytes = raw_bytes - OLD.raw_bytes WHERE id = 0; END;"
    "CREATE TRIGGER entries_update AFTER UPDATE OF stored_bytes, raw_bytes ON entries BEGIN"
    "  UPDATE totals SET entry_bytes = entry_bytes - OLD.stored_bytes + NEW.stored_bytes,"
    "    raw_bytes = raw_bytes - OLD.raw_bytes + NEW.raw_bytes WHERE id = 0; END;"
    "CREATE TRIGGER blobs_insert AFTER INSERT ON blobs BEGIN"
    "  UPDATE totals SET blobs = blobs + 1, blob_bytes = blob_bytes + NEW.stored_bytes"
    "    WHERE id = 0; END;"
    "CREATE TRIGGER blobs_delete AFTER DELETE ON blobs BEGIN"
    "  UPDATE totals SET blobs = blobs - 1, blob_bytes = blob_bytes - OLD.stored_bytes"
    "    WHERE id = 0; END;";

constexpr char kSelectTotals[] =
    "SELECT entries, entry_bytes + blob_bytes, raw_bytes FROM totals WHERE id = 0";

}  // namespace

SqliteCache::SqliteCache(std::unique_ptr<Connection> writer, std::string path,
                         SqliteCacheOptions options)
    : path_(std::move(path)), options_(std::move(options)), writer_(std::move(writer)) {
  writer_db_ = writer_->db;
}

SqliteCache::~SqliteCache() {
  BeginShutdown();
  if (background_.joinable()) background_.join();
  std::lock_guard<std::mutex> lock(mu_);
  FlushAccessTimesLocked();
}

void SqliteCache::BeginShutdown() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // Interrupts a statement running on the writer now (a VACUUM); thread-safe while the
  // connection is open, which it is until the destructor returns.
  sqlite3_interrupt(writer_db_);
}

namespace {

// Clears the group and other bits of `path` (a directory or a file, never a link: lstat, then
// chmod of what was checked) when coopd's user owns it, saying so; warns when another user
// owns it.
void Tighten(const std::string& path, mode_t private_mode) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
  if (st.st_uid != geteuid()) {
    spdlog::warn("cache: {} is owned by uid {}, not coopd's user ({}); it should be coopd's alone",
                 path, st.st_uid, geteuid());
    return;
  }
  if ((st.st_mode & 077) == 0) return;
  if (chmod(path.c_str(), private_mode) == 0) {
    spdlog::info("cache: {} was mode {:04o}, open to other users; made it {:04o}", path,
                 st.st_mode & 07777, private_mode);
  } else {
    spdlog::warn("cache: {} is mode {:04o}, open to other users, and cannot be made {:04o}: {}",
                 path, st.st_mode & 07777, private_mode, std::strerror(errno));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteCache>> SqliteCache::Open(const SqliteCacheOptions& options) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(options.dir, ec);
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        StrCat("cache: cannot create cache directory ", options.dir, ": ", ec.message()));
  }
  // The cache holds every caller's artifacts, private operators included: its directory is
  // coopd's user's alone (0700) and its files 0600. SQLite gives -wal and -shm the mode of the
  // database, so the database is made 0600 (created here, empty, which SQLite takes for a new
  // database) before SQLite opens it; files of older coopds (0644) are tightened.
  const std::string path = (std::filesystem::path(options.dir) / "cache.db").string();
  if (!existed) {
    chmod(options.dir.c_str(), 0700);
  } else {
    Tighten(options.dir, 0700);
  }
  if (const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      fd >= 0) {
    close(fd);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) Tighten(path + suffix, 0600);
  auto writer = OpenConnection(path, /*create=*/true, options.busy_timeout);
  if (!writer.ok()) return writer.status();
  std::unique_ptr<SqliteCache> cache(new SqliteCache(std::move(*writer), path, options));
  {
    std::lock_guard<std::mutex> lock(cache->mu_);
    sqlite3* db = cache->writer_->db;
    absl::Status s = Exec(db, "PRAGMA journal_mode=WAL", "set WAL mode");
    if (s.ok()) s = Exec(db, "PRAGMA synchronous=NORMAL", "set synchronous");
    if (s.ok()) s = cache->Migrate();
    if (s.ok()) s = cache->RefreshTotalsLocked();
    if (!s.ok()) {
      return absl::FailedPreconditionError(StrCat("cache: ", path, ": ", s.message()));
    }
  }
  {
    // Over budget already (a smaller --cache-max-mb, another process's writes): evict now, in
    // the background; the daemon is ready meanwhile.
    std::lock_guard<std::mutex> wake(cache->wake_mu_);
    cache->evict_requested_ = options.evict && cache->total_bytes_ > options.budget_bytes;
  }
  cache->background_ = std::thread([c = cache.get()] { c->Background(); });
  return cache;
}

absl::Status SqliteCache::Migrate() {
  sqlite3* db = writer_->db;
  int version = 0;
  {
    Stmt version_stmt(*writer_, "PRAGMA user_version");
    if (version_stmt.Step() != SQLITE_ROW) return version_stmt.status("read schema version");
    version = static_cast<int>(version_stmt.ColInt(0));
  }
  // A cached statement holds no lock once reset, but DROP needs none prepared on the tables.
  for (auto& entry : writer_->statements) sqlite3_finalize(entry.second);
  writer_->statements.clear();
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        StrCat("schema version ", version, " is newer than this coopd supports (", kSchemaVersion,
               "); run a newer coopd or choose another --cache-dir"));
  }
  if (version == kSchemaVersion) return absl::OkStatus();
  // One transaction: a crash mid-migration leaves the old version intact.
  Transaction txn(db);
  absl::Status s = txn.status();
  if (s.ok() && version == 0) {
    s = Exec(db, kCreateTables, "create tables");
    if (s.ok()) s = Exec(db, kCreateTotals, "create totals");
  } else if (s.ok() && version == 1) {
    // Schema 1 stored whole artifacts uncompressed, one per key. Its entries are rebuildable
    // (they are recompiled on demand), so the migration drops them rather than converting.
    spdlog::info("cache: migrating {} from schema 1 to {} (old entries are discarded)", path_,
                 kSchemaVersion);
    s = Exec(db, "DROP TABLE IF EXISTS entries", "drop schema 1");
    if (s.ok()) s = Exec(db, kCreateTables, "create tables");
    if (s.ok()) s = Exec(db, kCreateTotals, "create totals");
  } else if (s.ok() && version == 2) {
    // Schema 2 summed the whole file at every start; this pass reads it once more, to build
    // the totals row (and the size index) that replace that.
    spdlog::info("cache: migrating {} from schema 2 to {} (one pass over the file)", path_,
                 kSchemaVersion);
    s = Exec(db,
             "DELETE FROM blobs WHERE NOT EXISTS "
             "(SELECT 1 FROM entries WHERE entries.blob_digest = blobs.digest);"
             "DROP INDEX IF EXISTS entries_by_access;"
             "CREATE INDEX entries_by_access ON entries(last_access, created_at);",
             "migrate indexes");
    if (s.ok()) s = Exec(db, kCreateTotals, "create totals");
  }
  if (s.ok()) {
    s = Exec(db, StrCat("PRAGMA user_version=", kSchemaVersion).c_str(), "set schema version");
  }
  if (s.ok()) s = txn.Commit();
  if (!s.ok()) return absl::FailedPreconditionError(StrCat("cannot create schema: ", s.message()));
  return absl::OkStatus();
}

absl::Status SqliteCache::RefreshTotalsLocked() {
  Stmt q(*writer_, kSelectTotals);
  int rc = q.Step();
  if (rc != SQLITE_ROW) return SqliteError(writer_->db, rc, "read totals");
  entry_count_ = static_cast<uint64_t>(std::max<int64_t>(0, q.ColInt(0)));
  total_bytes_ = static_cast<uint64_t>(std::max<int64_t>(0, q.ColInt(1)));
  total_raw_bytes_ = static_cast<uint64_t>(std::max<int64_t>(0, q.ColInt(2)));
  return absl::OkStatus();
}

std::unique_ptr<Connection> SqliteCache::TakeReader(absl::Status* error) {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (!idle_readers_.empty()) {
      auto reader = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return reader;
    }
  }
  auto reader = OpenConnection(path_, /*create=*/false, options_.busy_timeout);
  if (!reader.ok()) {
    *error = absl::UnavailableError(reader.status().message());
    return nullptr;
  }
  Exec((*reader)->db, "PRAGMA query_only=1", "set query_only").IgnoreError();
  return std::move(*reader);
}

void SqliteCache::ReturnReader(std::unique_ptr<Connection> reader) {
  std::lock_guard<std::mutex> lock(readers_mu_);
  idle_readers_.push_back(std::move(reader));
}

absl::StatusOr<CacheValue> SqliteCache::Get(const std::string& key, EntryMeta* attributes) {
  ReaderLease reader(this);
  if (!reader.ok()) return reader.status();
  std::string digest;
  absl::StatusOr<std::string> meta = absl::DataLossError("record: meta missing");
  absl::StatusOr<std::string> blob = absl::DataLossError("record: blob missing");
  {
    Stmt q(*reader,
           "SELECT e.meta, e.blob_digest, b.record, e.family, e.dtype, e.arch, e.request_digest "
           "FROM entries e LEFT JOIN blobs b ON b.digest = e.blob_digest WHERE e.key = ?1");
    if (!q.ok()) return q.status("read");
    q.Text(1, key);
    int rc = q.Step();
    if (rc == SQLITE_DONE) {
      ++misses_;
      return absl::NotFoundError("disk: no entry");
    }
    if (rc != SQLITE_ROW) return SqliteError(reader->db, rc, "read");
    digest = q.ColString(1);
    meta = DecodeRecord(q.ColView(0));
    // Decoded straight from SQLite's buffer, hashed once: the record's checksum is the
    // payload's SHA-256, which is also the blob's content digest.
    std::array<uint8_t, 32> sha{};
    const std::string_view blob_record = q.ColView(2);
    if (!blob_record.empty()) blob = DecodeRecord(blob_record, &sha);
    if (blob.ok() && ToHex(sha.data(), sha.size()) != digest) {
      blob = absl::DataLossError("record: blob does not match its digest");
    }
    if (attributes != nullptr) {
      attributes->family = q.ColString(3);
      attributes->dtype = q.ColString(4);
      attributes->arch = q.ColString(5);
      attributes->request_digest = q.ColString(6);
    }
  }
  if (!meta.ok() || !blob.ok()) {
    ++corruptions_;
    ++misses_;
    const absl::Status why = !blob.ok() ? blob.status() : meta.status();
    spdlog::error("cache: dropped damaged entry {} ({}); it will be recompiled", key.substr(0, 16),
                  std::string(why.message()));
    std::lock_guard<std::mutex> lock(mu_);
    // Every entry sharing a bad blob is bad.
    absl::Status s = !blob.ok() ? DeleteBlobAndEntriesLocked(digest).status()
                                : DeleteEntriesLocked({key}).status();
    if (!s.ok()) {
      spdlog::warn("cache: could not delete damaged entry {}: {}", key.substr(0, 16),
                   std::string(s.message()));
    }
    return absl::NotFoundError(StrCat("disk: dropped a damaged record (", why.message(), ")"));
  }
  ++hits_;
  {
    std::lock_guard<std::mutex> lock(access_mu_);
    pending_access_[key] = NowMillis();
  }
  return CacheValue{std::move(*meta), std::move(*blob)};
}

void SqliteCache::NoteWriteResult(const absl::Status& s) {
  if (s.ok()) {
    if (degraded_) {
      spdlog::info("cache: {} is writable again; caching resumed", path_);
      degraded_ = false;
    }
    return;
  }
  ++write_failures_;
  if (!degraded_) {
    spdlog::warn("cache: cannot store in {} ({}); serving without caching until it is writable",
                 path_, std::string(s.message()));
    degraded_ = true;
  }
}

absl::Status SqliteCache::Put(const std::string& key, const CacheValue& value,
                              const EntryMeta& meta) {
  std::array<uint8_t, 32> sha{};
  const std::string blob_record = EncodeRecord(value.blob, 3, &sha);
  const std::string digest = ToHex(sha.data(), sha.size());
  const std::string meta_record = EncodeRecord(value.meta);
  const int64_t now = NowMillis();
  const uint64_t raw = value.meta.size() + value.blob.size();
  std::lock_guard<std::mutex> lock(mu_);
  auto write = [&]() -> absl::Status {
    Transaction txn(writer_->db);
    if (!txn.status().ok()) return txn.status();
    {
      Stmt ins(*writer_,
               "INSERT OR IGNORE INTO blobs(digest, record, raw_bytes, stored_bytes) "
               "VALUES(?1, ?2, ?3, ?4)");
      absl::Status s = ins.Text(1, digest)
                           .Blob(2, blob_record)
                           .Int(3, static_cast<int64_t>(value.blob.size()))
                           .Int(4, static_cast<int64_t>(blob_record.size()))
                           .Run("store blob");
      if (!s.ok()) return s;
    }
    // The blob of the entry this write replaces, deleted below if nothing else uses it.
    std::string old_digest;
    {
      Stmt old(*writer_, "SELECT blob_digest FROM entries WHERE key = ?1");
      int rc = old.Text(1, key).Step();
      if (rc == SQLITE_ROW) {
        old_digest = old.ColString(0);
      } else if (rc != SQLITE_DONE) {
        return SqliteError(writer_->db, rc, "read entry");
      }
    }
    {
      Stmt ins(*writer_,
               "INSERT INTO entries(key, blob_digest, meta, family, dtype, arch, request_digest, "
               "components, created_at, last_access, raw_bytes, stored_bytes) "
               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11) "
               "ON CONFLICT(key) DO UPDATE SET blob_digest = excluded.blob_digest, "
               "meta = excluded.meta, family = excluded.family, dtype = excluded.dtype, "
               "arch = excluded.arch, request_digest = excluded.request_digest, "
               "components = excluded.components, created_at = excluded.created_at, "
               "last_access = excluded.last_access, raw_bytes = excluded.raw_bytes, "
               "stored_bytes = excluded.stored_bytes");
      absl::Status s = ins.Text(1, key)
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
      if (!s.ok()) return s;
    }
    if (!old_digest.empty() && old_digest != digest) {
      Stmt orphan(*writer_, kDeleteOrphanBlob);
      if (absl::Status s = orphan.Text(1, old_digest).Run("drop replaced blob"); !s.ok()) return s;
    }
    return txn.Commit();
  };
  absl::Status s = write();
  NoteWriteResult(s);
  if (!s.ok()) return s;
  RefreshTotalsLocked().IgnoreError();
  if (options_.evict && total_bytes_ > options_.budget_bytes) {
    {
      std::lock_guard<std::mutex> wake(wake_mu_);
      evict_requested_ = true;
    }
    cv_.notify_all();
  }
  return absl::OkStatus();
}

}  // namespace coopd

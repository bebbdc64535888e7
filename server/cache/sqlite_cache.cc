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
#include <set>

#include "server/cache/record.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

// One connection and the statements prepared on it (once each, SQLITE_PREPARE_PERSISTENT).
// Used by one thread at a time: the writer behind SqliteCache::mu_, a reader while leased.
struct SqliteCache::Connection {
  sqlite3* db = nullptr;
  // Keyed by the address of the SQL text: every statement is a string literal of this file.
  std::unordered_map<const char*, sqlite3_stmt*> statements;
  ~Connection() {
    for (auto& entry : statements) sqlite3_finalize(entry.second);
    sqlite3_close_v2(db);
  }
};

namespace {

using Connection = SqliteCache::Connection;

// Codes for what the caller should do: a full disk is RESOURCE_EXHAUSTED (free space), a lock
// held by another process UNAVAILABLE (retry), a read-only or unopenable file
// FAILED_PRECONDITION (fix the system), an interrupt at shutdown UNAVAILABLE.
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

// A statement borrowed from a connection's cache; reset (and its bindings cleared) on Reset()
// and on destruction, so it can be reused by the next caller.
class Stmt {
 public:
  Stmt(Connection& c, const char* sql) : db_(c.db) {
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
  absl::Status Run(std::string_view what) {
    if (!ok()) return status(what);
    int rc;
    while ((rc = sqlite3_step(stmt_)) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, rc, what);
    return absl::OkStatus();
  }
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
  explicit Transaction(sqlite3* db) : db_(db), status_(Exec(db, "BEGIN IMMEDIATE", "begin")) {}
  ~Transaction() {
    if (status_.ok() && !committed_ && !sqlite3_get_autocommit(db_)) {
      Exec(db_, "ROLLBACK", "rollback").IgnoreError();
    }
  }
  const absl::Status& status() const { return status_; }
  absl::Status Commit() {
    if (!status_.ok()) return status_;
    absl::Status s = Exec(db_, "COMMIT", "commit");
    if (s.ok()) committed_ = true;
    return s;
  }

 private:
  sqlite3* db_;
  absl::Status status_;
  bool committed_ = false;
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
constexpr char kDeleteOrphanBlob[] =
    "DELETE FROM blobs WHERE digest = ?1 AND NOT EXISTS "
    "(SELECT 1 FROM entries WHERE blob_digest = ?1)";

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

#include "server/cache/sqlite_cache.h"

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "server/sha256.h"
#include "server/strings.h"

namespace coopd {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'O', 'P', 'R', 'E', 'C', '1'};
constexpr size_t kHeaderSize = sizeof(kMagic) + 4 + 32;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

absl::StatusOr<StmtPtr> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) {
    return absl::InternalError(StrCat("sqlite: prepare failed: ", sqlite3_errmsg(db)));
  }
  return StmtPtr(raw);
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR...: the disk is the problem, not the request.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string msg =
      StrCat("sqlite: ", what, ": ", sqlite3_errmsg(db), " (", sqlite3_errstr(rc), ")");
  if (rc == SQLITE_FULL || rc == SQLITE_READONLY || (rc & 0xff) == SQLITE_IOERR ||
      rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    return absl::UnavailableError(msg);
  }
  return absl::InternalError(msg);
}

}  // namespace

std::string SqliteCache::EncodeRecord(const std::string& payload) {
  std::string rec;
  rec.reserve(kHeaderSize + payload.size());
  rec.append(kMagic, sizeof(kMagic));
  for (int i = 0; i < 4; ++i) rec.push_back(static_cast<char>((kRecordVersion >> (8 * i)) & 0xff));
  Sha256 h;
  h.Update(payload);
  auto d = h.Finish();
  rec.append(reinterpret_cast<const char*>(d.data()), d.size());
  rec.append(payload);
  return rec;
}

absl::StatusOr<std::string> SqliteCache::DecodeRecord(const std::string& rec) {
  if (rec.size() < kHeaderSize) {
    return absl::InvalidArgumentError(
        StrCat("record: truncated (", rec.size(), " bytes, header needs ", kHeaderSize, ")"));
  }
  if (std::memcmp(rec.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("record: bad magic");
  }
  uint32_t version = 0;
  for (int i = 0; i < 4; ++i) {
    version |= uint32_t{static_cast<uint8_t>(rec[sizeof(kMagic) + i])} << (8 * i);
  }
  if (version != kRecordVersion) {
    return absl::InvalidArgumentError(
        StrCat("record: format version ", version, ", expected ", kRecordVersion));
  }
  std::string payload = rec.substr(kHeaderSize);
  Sha256 h;
  h.Update(payload);
  auto d = h.Finish();
  if (std::memcmp(d.data(), rec.data() + sizeof(kMagic) + 4, d.size()) != 0) {
    return absl::InvalidArgumentError("record: checksum mismatch");
  }
  return payload;
}

absl::StatusOr<std::unique_ptr<SqliteCache>> SqliteCache::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        StrCat("cache: cannot create cache directory ", dir, ": ", ec.message()));
  }
  const std::string path = (std::filesystem::path(dir) / "cache.db").string();
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
  std::unique_ptr<SqliteCache> cache(new SqliteCache(std::move(db), path));
  std::lock_guard<std::mutex> lock(cache->mu_);
  absl::Status s = cache->Exec("PRAGMA journal_mode=WAL");
  if (!s.ok()) return absl::FailedPreconditionError(StrCat("cache: ", path, ": ", s.message()));
  if (!(s = cache->Exec("PRAGMA synchronous=NORMAL")).ok()) return s;

  auto stmt = Prepare(cache->db_.get(), "PRAGMA user_version");
  if (!stmt.ok()) return stmt.status();
  int version = 0;
  if (sqlite3_step(stmt->get()) == SQLITE_ROW) version = sqlite3_column_int(stmt->get(), 0);
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(StrCat(
        "cache: ", path, " has schema version ", version, ", newer than this coopd supports (",
        kSchemaVersion, "); run a newer coopd or choose another --cache-dir"));
  }
  if (version < 1) {
    s = cache->Exec(
        "BEGIN IMMEDIATE;"
        "CREATE TABLE IF NOT EXISTS entries("
        "  key TEXT PRIMARY KEY,"
        "  family TEXT NOT NULL,"
        "  dtype TEXT NOT NULL,"
        "  arch TEXT NOT NULL,"
        "  record BLOB NOT NULL,"
        "  created_at INTEGER NOT NULL,"
        "  last_access INTEGER NOT NULL);"
        "PRAGMA user_version=1;"
        "COMMIT;");
    if (!s.ok()) {
      cache->Exec("ROLLBACK").IgnoreError();
      return absl::FailedPreconditionError(
          StrCat("cache: cannot create schema in ", path, ": ", s.message()));
    }
  }
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

absl::StatusOr<std::string> SqliteCache::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto stmt = Prepare(db_.get(), "SELECT record FROM entries WHERE key = ?1");
  if (!stmt.ok()) return stmt.status();
  sqlite3_bind_text(stmt->get(), 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
  int rc = sqlite3_step(stmt->get());
  if (rc == SQLITE_DONE) {
    ++stats_.misses;
    return absl::NotFoundError("disk: no entry");
  }
  if (rc != SQLITE_ROW) return SqliteError(db_.get(), rc, "read");
  const void* blob = sqlite3_column_blob(stmt->get(), 0);
  const int size = sqlite3_column_bytes(stmt->get(), 0);
  std::string record(static_cast<const char*>(blob), static_cast<size_t>(size));
  stmt->reset();

  auto payload = DecodeRecord(record);
  if (!payload.ok()) {
    ++stats_.corruptions;
    ++stats_.misses;
    auto del = Prepare(db_.get(), "DELETE FROM entries WHERE key = ?1");
    if (del.ok()) {
      sqlite3_bind_text(del->get(), 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
      sqlite3_step(del->get());
    }
    return absl::NotFoundError(
        StrCat("disk: dropped a damaged record (", payload.status().message(), ")"));
  }
  ++stats_.hits;
  auto touch = Prepare(db_.get(), "UPDATE entries SET last_access = ?2 WHERE key = ?1");
  if (touch.ok()) {
    sqlite3_bind_text(touch->get(), 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    sqlite3_bind_int64(touch->get(), 2, NowSeconds());
    sqlite3_step(touch->get());  // best effort: a read-only disk still serves hits
  }
  return std::move(*payload);
}

absl::Status SqliteCache::Put(const std::string& key, const std::string& value,
                              const EntryMeta& meta) {
  const std::string record = EncodeRecord(value);
  std::lock_guard<std::mutex> lock(mu_);
  auto stmt = Prepare(db_.get(),
                      "INSERT INTO entries(key, family, dtype, arch, record, created_at, "
                      "last_access) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?6) "
                      "ON CONFLICT(key) DO UPDATE SET record = excluded.record, "
                      "last_access = excluded.last_access");
  if (!stmt.ok()) {
    ++stats_.write_failures;
    return stmt.status();
  }
  sqlite3_stmt* s = stmt->get();
  sqlite3_bind_text(s, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
  sqlite3_bind_text(s, 2, meta.family.data(), static_cast<int>(meta.family.size()), SQLITE_STATIC);
  sqlite3_bind_text(s, 3, meta.dtype.data(), static_cast<int>(meta.dtype.size()), SQLITE_STATIC);
  sqlite3_bind_text(s, 4, meta.arch.data(), static_cast<int>(meta.arch.size()), SQLITE_STATIC);
  sqlite3_bind_blob(s, 5, record.data(), static_cast<int>(record.size()), SQLITE_STATIC);
  sqlite3_bind_int64(s, 6, NowSeconds());
  int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) {
    ++stats_.write_failures;
    return SqliteError(db_.get(), rc, "write");
  }
  return absl::OkStatus();
}

TierStats SqliteCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  TierStats s = stats_;
  auto stmt = Prepare(db_.get(), "SELECT COUNT(*), COALESCE(SUM(LENGTH(record)), 0) FROM entries");
  if (stmt.ok() && sqlite3_step(stmt->get()) == SQLITE_ROW) {
    s.entries = static_cast<uint64_t>(sqlite3_column_int64(stmt->get(), 0));
    s.bytes = static_cast<uint64_t>(sqlite3_column_int64(stmt->get(), 1));
  }
  return s;
}

}  // namespace coopd

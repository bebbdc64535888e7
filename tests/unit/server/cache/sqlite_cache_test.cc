#include "server/cache/sqlite_cache.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "server/cache/record.h"
#include "server/util/sha256.h"

namespace coopd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

EntryMeta Meta(const std::string& family, const std::string& dtype = "float32",
               const std::string& arch = "sm_90") {
  return EntryMeta{family, dtype, arch, "req-" + family + dtype, ""};
}

// A payload that compresses about 4:1, like LTO-IR.
std::string Blob(int seed, size_t size) {
  std::string s;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u;
  while (s.size() < size) {
    x = x * 1103515245 + 12345;
    s += "op" + std::to_string((x >> 16) % 64) + ";";
  }
  s.resize(size);
  return s;
}

class SqliteCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coopd-sqlite-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<SqliteCache> Open(uint64_t budget = uint64_t{1} << 30,
                                    std::chrono::milliseconds busy = 5000ms) {
    SqliteCacheOptions o;
    o.dir = dir_;
    o.budget_bytes = budget;
    o.flush_interval = 50ms;
    o.busy_timeout = busy;
    auto c = SqliteCache::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Runs SQL on the database file through a separate connection, as the sqlite3 CLI would.
  void ExecOnFile(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/cache.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }

  // The first column of the first row of `sql`, run on the file through a separate connection.
  std::string QueryFile(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((dir_ + "/cache.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
  }

  // The cache's totals against sums over the tables, computed here independently.
  void ExpectTotalsExact(SqliteCache& cache) {
    const TierStats s = cache.Stats();
    EXPECT_EQ(std::to_string(s.entries), QueryFile("SELECT COUNT(*) FROM entries"));
    EXPECT_EQ(std::to_string(s.bytes),
              QueryFile("SELECT COALESCE((SELECT SUM(stored_bytes) FROM entries), 0) + "
                        "COALESCE((SELECT SUM(stored_bytes) FROM blobs), 0)"));
    EXPECT_EQ(std::to_string(s.raw_bytes),
              QueryFile("SELECT COALESCE(SUM(raw_bytes), 0) FROM entries"));
    EXPECT_EQ(QueryFile("SELECT COUNT(*) FROM blobs WHERE NOT EXISTS (SELECT 1 FROM entries "
                        "WHERE blob_digest = blobs.digest)"),
              "0")
        << "no blob outlives its entries";
  }

  std::string dir_;
};

// A second connection holding the write lock (BEGIN EXCLUSIVE), as another process would.
class WriteLock {
 public:
  explicit WriteLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ~WriteLock() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST_F(SqliteCacheTest, StoresAndReadsBackCompressed) {
  auto cache = Open();
  CacheValue v{"meta\0bytes", Blob(1, 100000)};
  ASSERT_TRUE(cache->Put("k1", v, Meta("block_reduce")).ok());
  auto got = cache->Get("k1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->meta, v.meta);
  EXPECT_EQ(got->blob, v.blob);
  EXPECT_TRUE(absl::IsNotFound(cache->Get("k2").status()));
  TierStats s = cache->Stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.raw_bytes, v.meta.size() + v.blob.size());
  EXPECT_LT(s.bytes, s.raw_bytes / 2) << "stored compressed";
}

TEST_F(SqliteCacheTest, IdenticalBlobsAreStoredOnce) {
  auto cache = Open();
  const std::string blob = Blob(2, 50000);
  ASSERT_TRUE(cache->Put("k1", {"m1", blob}, Meta("block_reduce")).ok());
  const uint64_t one = cache->Stats().bytes;
  ASSERT_TRUE(cache->Put("k2", {"m2", blob}, Meta("block_scan")).ok());
  const uint64_t two = cache->Stats().bytes;
  EXPECT_LT(two - one, 200u) << "the second entry adds only its meta record";
  EXPECT_EQ(cache->Get("k2")->blob, blob);
  // Purging one entry keeps the shared blob for the other.
  ASSERT_EQ(*cache->Purge(CacheFilter{"block_reduce", "", ""}), 1u);
  EXPECT_EQ(cache->Get("k2")->blob, blob);
  ASSERT_EQ(*cache->Purge(CacheFilter{}), 1u);
  EXPECT_EQ(cache->Stats().bytes, 0u) << "the orphaned blob went with the last entry";
}

TEST_F(SqliteCacheTest, PersistsAcrossReopen) {
  {
    auto cache = Open();
    ASSERT_TRUE(cache->Put("k", {"m", "v"}, Meta("block_scan", "int32", "sm_80")).ok());
  }
  auto cache = Open();
  auto got = cache->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->blob, "v");
  EXPECT_EQ(cache->Stats().entries, 1u);
}

TEST_F(SqliteCacheTest, FlippedBlobBytesAreDroppedAndCountedNeverServed) {
  auto cache = Open();
  ASSERT_TRUE(cache->Put("k", {"m", Blob(3, 20000)}, Meta("block_reduce")).ok());
  ASSERT_TRUE(cache->Put("other", {"m2", Blob(3, 20000)}, Meta("block_scan")).ok());
  // Flip bytes in the middle of the stored (compressed) blob, as the sqlite3 CLI could.
  ExecOnFile("UPDATE blobs SET record = substr(record, 1, 100) || X'FFFF' || substr(record, 103)");
  auto got = cache->Get("k");
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
  TierStats s = cache->Stats();
  EXPECT_EQ(s.corruptions, 1u);
  EXPECT_EQ(s.entries, 0u) << "both entries shared the bad blob; both are gone";
  EXPECT_TRUE(absl::IsNotFound(cache->Get("other").status()));
}

TEST_F(SqliteCacheTest, FlippedMetaIsDroppedToo) {
  auto cache = Open();
  ASSERT_TRUE(cache->Put("k", {std::string(500, 'm'), "blob"}, Meta("block_reduce")).ok());
  // Overwrite three bytes of the meta record's stored checksum.
  ExecOnFile("UPDATE entries SET meta = substr(meta, 1, 39) || 'ABC' || substr(meta, 43)");
  EXPECT_TRUE(absl::IsNotFound(cache->Get("k").status()));
  EXPECT_EQ(cache->Stats().corruptions, 1u);
}

TEST_F(SqliteCacheTest, VerifyFindsAndRemovesEveryBadRecord) {
  auto cache = Open();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(
        cache->Put("k" + std::to_string(i), {"m", Blob(i, 3000)}, Meta("block_reduce")).ok());
  }
  ExecOnFile(
      "UPDATE blobs SET record = substr(record, 1, 80) || X'EE' || substr(record, 82) "
      "WHERE digest IN (SELECT blob_digest FROM entries WHERE key IN ('k3', 'k7'))");
  auto report = cache->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->blobs_checked, 10u);
  EXPECT_EQ(report->entries_checked, 8u);
  EXPECT_EQ(report->bad_removed, 2u);
  std::sort(report->bad_keys.begin(), report->bad_keys.end());
  EXPECT_EQ(report->bad_keys, (std::vector<std::string>{"k3", "k7"}));
  EXPECT_EQ(cache->Stats().entries, 8u);
  auto again = cache->Verify();
  EXPECT_EQ(again->bad_removed, 0u);
}

TEST_F(SqliteCacheTest, EvictsLeastRecentlyUsedToStayUnderBudget) {
  // Budget ~ 6 entries of ~20 KB stored each.
  const uint64_t budget = 120 * 1024;
  auto cache = Open(budget);
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) {
    keys.push_back("old" + std::to_string(i));
    ASSERT_TRUE(cache->Put(keys.back(), {"m", Blob(100 + i, 80000)}, Meta("block_reduce")).ok());
  }
  // Touch old0 and old1 so they are recent; old2 and old3 become the least recently used.
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(cache->Get("old0").ok());
  ASSERT_TRUE(cache->Get("old1").ok());
  cache->FlushAccessTimes();
  std::this_thread::sleep_for(20ms);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        cache->Put("new" + std::to_string(i), {"m", Blob(200 + i, 80000)}, Meta("block_scan"))
            .ok());
  }
  // The background evictor brings the total under the budget.
  for (int i = 0; i < 200 && cache->Stats().bytes > budget; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  TierStats s = cache->Stats();
  EXPECT_LE(s.bytes, budget);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_TRUE(absl::IsNotFound(cache->Get("old2").status()));
  EXPECT_TRUE(absl::IsNotFound(cache->Get("old3").status()));
  EXPECT_TRUE(cache->Get("new5").ok()) << "the newest entry survives";
  // The in-memory total agrees with the database.
  auto listed = cache->List(CacheFilter{}, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), s.entries);
}

TEST_F(SqliteCacheTest, ListFiltersAndOrdersByRecency) {
  auto cache = Open();
  ASSERT_TRUE(cache->Put("a", {"m", "x"}, Meta("block_reduce", "float32", "sm_90")).ok());
  ASSERT_TRUE(cache->Put("b", {"m", "y"}, Meta("block_scan", "int32", "sm_90")).ok());
  ASSERT_TRUE(cache->Put("c", {"m", "z"}, Meta("block_scan", "int32", "sm_80")).ok());
  auto scans = cache->List(CacheFilter{"block_scan", "", ""}, 0);
  ASSERT_TRUE(scans.ok());
  EXPECT_EQ(scans->size(), 2u);
  auto sm80 = cache->List(CacheFilter{"", "", "sm_80"}, 0);
  ASSERT_EQ(sm80->size(), 1u);
  EXPECT_EQ((*sm80)[0].key, "c");
  EXPECT_EQ((*sm80)[0].meta.dtype, "int32");
  EXPECT_EQ(cache->List(CacheFilter{}, 1)->size(), 1u);
}

TEST_F(SqliteCacheTest, FindByRequestReturnsEveryKeyForIt) {
  auto cache = Open();
  EntryMeta m = Meta("block_reduce");
  m.components = "c1";
  ASSERT_TRUE(cache->Put("k1", {"m", "x"}, m).ok());
  m.components = "c2";
  ASSERT_TRUE(cache->Put("k2", {"m", "y"}, m).ok());
  auto found = cache->FindByRequest(m.request_digest);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 2u);
  EXPECT_TRUE(cache->FindByRequest("nothing")->empty());
}

TEST_F(SqliteCacheTest, VacuumShrinksTheFileAfterAPurge) {
  auto cache = Open();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        cache->Put("k" + std::to_string(i), {"m", Blob(300 + i, 200000)}, Meta("block_reduce"))
            .ok());
  }
  ASSERT_EQ(*cache->Purge(CacheFilter{}), 20u);
  auto report = cache->Vacuum();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LT(report->file_bytes_after, report->file_bytes_before / 2);
}

TEST_F(SqliteCacheTest, RefusesNewerSchema) {
  { ASSERT_NE(Open(), nullptr); }
  ExecOnFile("PRAGMA user_version = 99");
  SqliteCacheOptions o;
  o.dir = dir_;
  auto cache = SqliteCache::Open(o);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(
      std::string(cache.status().message()).find("schema version 99 is newer than this coopd"),
      std::string::npos)
      << cache.status();
}

TEST_F(SqliteCacheTest, MigratesSchemaOne) {
  ExecOnFile(
      "CREATE TABLE entries(key TEXT PRIMARY KEY, family TEXT, dtype TEXT, arch TEXT, "
      "record BLOB, created_at INTEGER, last_access INTEGER);"
      "INSERT INTO entries VALUES('old', 'block_reduce', 'float32', 'sm_90', X'00', 1, 1);"
      "PRAGMA user_version = 1;");
  auto cache = Open();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->Stats().entries, 0u);
  ASSERT_TRUE(cache->Put("k", {"m", "v"}, Meta("block_reduce")).ok());
  EXPECT_EQ(cache->Get("k")->blob, "v");
}

// Hundreds of entries over budget go in a few transactions of many entries each (the old
// evictor deleted one entry per transaction and summed the whole file after each).
TEST_F(SqliteCacheTest, EvictsHundredsOfEntriesInBatchesOfMany) {
  {
    auto fill = Open();
    for (int i = 0; i < 600; ++i) {
      ASSERT_TRUE(
          fill->Put("k" + std::to_string(i), {"m", Blob(i, 20000)}, Meta("block_reduce")).ok());
    }
  }
  const uint64_t full = std::stoull(QueryFile("SELECT entry_bytes + blob_bytes FROM totals"));
  const uint64_t budget = full / 3;  // about 440 of the 600 must go
  auto cache = Open(budget);
  for (int i = 0; i < 600 && cache->Stats().bytes > budget; ++i) std::this_thread::sleep_for(50ms);
  const TierStats s = cache->Stats();
  EXPECT_LE(s.bytes, budget);
  EXPECT_GE(s.evictions, 400u);
  EXPECT_LT(s.entries, 200u);
  EXPECT_GE(cache->eviction_batches(), 2u) << "at most kMaxEvictBatch entries per transaction";
  EXPECT_LE(cache->eviction_batches(), s.evictions / 50) << "many entries per transaction";
  // The oldest went first: the newest entry survives, the first is gone.
  EXPECT_TRUE(cache->Get("k599").ok());
  EXPECT_TRUE(absl::IsNotFound(cache->Get("k0").status()));
  ExpectTotalsExact(*cache);
}

// The persisted totals stay exact through inserts, shared blobs, replacements (whose old blob
// is deleted with the write), purges and reopening; Open reads them instead of summing.
TEST_F(SqliteCacheTest, TotalsRowStaysExactThroughEveryKindOfWrite) {
  {
    auto cache = Open();
    for (int i = 0; i < 200; ++i) {
      const std::string dtype = i % 2 ? "int32" : "float32";
      ASSERT_TRUE(cache
                      ->Put("k" + std::to_string(i),
                            {"meta" + std::to_string(i), Blob(i % 150, 5000)},
                            Meta("block_reduce", dtype))
                      .ok());
    }
    ExpectTotalsExact(*cache);
    // Replace 20 entries with new payloads: their old blobs (unshared ones) go with the write.
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(
          cache->Put("k" + std::to_string(i), {"new", Blob(1000 + i, 7000)}, Meta("block_scan"))
              .ok());
    }
    ExpectTotalsExact(*cache);
    auto removed = cache->Purge(CacheFilter{"", "int32", ""});
    ASSERT_TRUE(removed.ok()) << removed.status();
    EXPECT_EQ(*removed, 90u);  // the odd keys from 20 on
    ExpectTotalsExact(*cache);
    EXPECT_EQ(cache->Stats().entries, 110u);
  }
  auto reopened = Open();
  EXPECT_EQ(reopened->Stats().entries, 110u);
  ExpectTotalsExact(*reopened);
}

// Another process holding the write lock: reads go on (WAL), a write is counted as a failure,
// and a purge returns UNAVAILABLE naming the lock instead of a count of what it did not do.
TEST_F(SqliteCacheTest, ALockHeldElsewhereFailsWritesButNotReads) {
  auto cache = Open(uint64_t{1} << 30, 200ms);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(
        cache->Put("k" + std::to_string(i), {"m", Blob(i, 3000)}, Meta("block_reduce")).ok());
  }
  {
    WriteLock lock(dir_ + "/cache.db");
    auto got = cache->Get("k3");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->blob, Blob(3, 3000));
    auto purge = cache->Purge(CacheFilter{"block_reduce", "", ""});
    ASSERT_FALSE(purge.ok());
    EXPECT_TRUE(absl::IsUnavailable(purge.status())) << purge.status();
    EXPECT_NE(purge.status().message().find("removed 0 of 10 matching entries"), std::string::npos)
        << purge.status();
    EXPECT_NE(purge.status().message().find("locked"), std::string::npos) << purge.status();
    EXPECT_FALSE(cache->Put("k99", {"m", "v"}, Meta("block_reduce")).ok());
    EXPECT_EQ(cache->Stats().write_failures, 1u);
    EXPECT_TRUE(cache->Stats().degraded);
    auto vacuum = cache->Vacuum();
    EXPECT_TRUE(absl::IsUnavailable(vacuum.status())) << vacuum.status();
  }
  EXPECT_EQ(cache->Stats().entries, 10u);
  auto purge = cache->Purge(CacheFilter{"block_reduce", "", ""});
  ASSERT_TRUE(purge.ok()) << purge.status();
  EXPECT_EQ(*purge, 10u);
  ExpectTotalsExact(*cache);
}

// Schema 2 (no totals row) is migrated in place: its entries stay, orphaned blobs go, and the
// totals are computed once.
TEST_F(SqliteCacheTest, MigratesSchemaTwoKeepingItsEntries) {
  const std::string payload = Blob(7, 40000);
  const std::string digest = Sha256::Hex(payload);
  const std::string blob_record = EncodeRecord(payload);
  const std::string meta_record = EncodeRecord("the meta");
  auto hex = [](const std::string& s) {
    return ToHex(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  ExecOnFile(
      "CREATE TABLE blobs(digest TEXT PRIMARY KEY, record BLOB NOT NULL, raw_bytes INTEGER NOT "
      "NULL, stored_bytes INTEGER NOT NULL);"
      "CREATE TABLE entries(key TEXT PRIMARY KEY, blob_digest TEXT NOT NULL, meta BLOB NOT NULL,"
      " family TEXT NOT NULL, dtype TEXT NOT NULL, arch TEXT NOT NULL, request_digest TEXT NOT "
      "NULL, components BLOB NOT NULL, created_at INTEGER NOT NULL, last_access INTEGER NOT "
      "NULL, raw_bytes INTEGER NOT NULL, stored_bytes INTEGER NOT NULL);"
      "CREATE INDEX entries_by_access ON entries(last_access);"
      "CREATE INDEX entries_by_request ON entries(request_digest);"
      "CREATE INDEX entries_by_blob ON entries(blob_digest);"
      "INSERT INTO blobs VALUES('" +
      digest + "', X'" + hex(blob_record) + "', " + std::to_string(payload.size()) + ", " +
      std::to_string(blob_record.size()) +
      ");"
      "INSERT INTO blobs VALUES('orphan', X'00', 1, 1);"
      "INSERT INTO entries VALUES('old', '" +
      digest + "', X'" + hex(meta_record) +
      "', 'block_reduce', 'float32', 'sm_90', 'r', X'', 1, 1, " +
      std::to_string(payload.size() + 8) + ", " + std::to_string(meta_record.size()) +
      ");"
      "PRAGMA user_version = 2;");
  auto cache = Open();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(QueryFile("PRAGMA user_version"), "3");
  auto got = cache->Get("old");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->blob, payload);
  EXPECT_EQ(got->meta, "the meta");
  EXPECT_EQ(cache->Stats().entries, 1u);
  EXPECT_EQ(cache->Stats().bytes, blob_record.size() + meta_record.size());
  ExpectTotalsExact(*cache);
}

// A totals row that disagrees with the tables (edited by hand) is found and rebuilt by Verify.
TEST_F(SqliteCacheTest, VerifyRebuildsTotalsThatDisagreeWithTheTables) {
  {
    auto cache = Open();
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(
          cache->Put("k" + std::to_string(i), {"m", Blob(i, 2000)}, Meta("block_reduce")).ok());
    }
  }
  ExecOnFile("UPDATE totals SET entries = 999, blob_bytes = 5");
  auto cache = Open();
  EXPECT_EQ(cache->Stats().entries, 999u) << "Open reads the row, it does not sum the tables";
  auto report = cache->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->totals_corrected);
  EXPECT_EQ(report->bad_removed, 0u);
  EXPECT_EQ(cache->Stats().entries, 30u);
  ExpectTotalsExact(*cache);
  auto again = cache->Verify();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->totals_corrected);
}

// BeginShutdown makes long maintenance stop with UNAVAILABLE instead of running on.
TEST_F(SqliteCacheTest, MaintenanceStopsAfterBeginShutdown) {
  auto cache = Open();
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(
        cache->Put("k" + std::to_string(i), {"m", Blob(i, 2000)}, Meta("block_reduce")).ok());
  }
  cache->BeginShutdown();
  EXPECT_TRUE(absl::IsUnavailable(cache->Verify().status()));
  EXPECT_TRUE(absl::IsUnavailable(cache->Vacuum().status()));
  auto purge = cache->Purge(CacheFilter{"block_reduce", "", ""});
  EXPECT_TRUE(absl::IsUnavailable(purge.status())) << purge.status();
  EXPECT_TRUE(cache->Get("k1").ok()) << "reads are still served";
}

TEST_F(SqliteCacheTest, UsesWalMode) {
  auto cache = Open();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/cache.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

}  // namespace
}  // namespace coopd

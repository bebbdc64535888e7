#include "server/cache/sqlite_cache.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

namespace coopd {
namespace {

namespace fs = std::filesystem;

class SqliteCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coopd-sqlite-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs SQL on the database file through a separate connection, as the sqlite3 CLI would.
  void ExecOnFile(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/cache.db").c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }

  std::string dir_;
};

TEST_F(SqliteCacheTest, StoresAndReadsBack) {
  auto cache = SqliteCache::Open(dir_);
  ASSERT_TRUE(cache.ok()) << cache.status();
  std::string value("binary\0value", 12);
  ASSERT_TRUE((*cache)->Put("k1", value, {"block_reduce", "float32", "sm_90"}).ok());
  auto got = (*cache)->Get("k1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, value);
  EXPECT_TRUE(absl::IsNotFound((*cache)->Get("k2").status()));
  TierStats s = (*cache)->Stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_GT(s.bytes, value.size());
}

TEST_F(SqliteCacheTest, PersistsAcrossReopen) {
  {
    auto cache = SqliteCache::Open(dir_);
    ASSERT_TRUE(cache.ok());
    ASSERT_TRUE((*cache)->Put("k", "v", {"block_scan", "int32", "sm_80"}).ok());
  }
  auto cache = SqliteCache::Open(dir_);
  ASSERT_TRUE(cache.ok());
  auto got = (*cache)->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "v");
}

TEST_F(SqliteCacheTest, DamagedRecordIsDroppedAndCountedNeverServed) {
  auto cache = SqliteCache::Open(dir_);
  ASSERT_TRUE(cache.ok());
  ASSERT_TRUE((*cache)->Put("k", std::string(1000, 'z'), {"f", "d", "a"}).ok());
  // Flip one payload byte in place, as a bad disk or a stray writer would.
  ExecOnFile(
      "UPDATE entries SET record = substr(record, 1, 500) || X'00' || substr(record, 502) "
      "WHERE key = 'k'");
  auto got = (*cache)->Get("k");
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
  EXPECT_NE(std::string(got.status().message()).find("checksum mismatch"), std::string::npos)
      << got.status();
  TierStats s = (*cache)->Stats();
  EXPECT_EQ(s.corruptions, 1u);
  EXPECT_EQ(s.entries, 0u) << "the damaged row must be deleted";
}

TEST_F(SqliteCacheTest, RecordDecodeNamesTheFailedCheck) {
  const std::string good = SqliteCache::EncodeRecord("payload");
  ASSERT_TRUE(SqliteCache::DecodeRecord(good).ok());
  EXPECT_EQ(*SqliteCache::DecodeRecord(good), "payload");

  std::string bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_EQ(SqliteCache::DecodeRecord(bad_magic).status().message(), "record: bad magic");

  std::string bad_version = good;
  bad_version[8] = 9;
  EXPECT_EQ(SqliteCache::DecodeRecord(bad_version).status().message(),
            "record: format version 9, expected 1");

  EXPECT_NE(std::string(SqliteCache::DecodeRecord(good.substr(0, 20)).status().message())
                .find("truncated"),
            std::string::npos);

  std::string bad_payload = good;
  bad_payload.back() ^= 1;
  EXPECT_EQ(SqliteCache::DecodeRecord(bad_payload).status().message(), "record: checksum mismatch");
}

TEST_F(SqliteCacheTest, RefusesNewerSchema) {
  { ASSERT_TRUE(SqliteCache::Open(dir_).ok()); }
  ExecOnFile("PRAGMA user_version = 99");
  auto cache = SqliteCache::Open(dir_);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(cache.status().message()).find("schema version 99, newer than this coopd"),
            std::string::npos)
      << cache.status();
}

TEST_F(SqliteCacheTest, UsesWalMode) {
  auto cache = SqliteCache::Open(dir_);
  ASSERT_TRUE(cache.ok());
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

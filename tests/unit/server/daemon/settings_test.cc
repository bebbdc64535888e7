#include "server/daemon/settings.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

TEST(Settings, TheTableIsWellFormed) {
  EXPECT_TRUE(CheckSettingsTable(Settings()).ok()) << CheckSettingsTable(Settings());
}

TEST(Settings, ABrokenRowIsNamed) {
  auto table = Settings();
  table.push_back(table.front());
  table.back().key = "server.other";
  table.back().flag = "--other";
  EXPECT_EQ(CheckSettingsTable(table).message(),
            "settings table: server.other: COOPD_SOCKET is used twice");
  table.back().env = "OTHER";
  EXPECT_EQ(CheckSettingsTable(table).message(),
            "settings table: server.other: the variable must start with COOPD_");
  table.back().env = "COOPD_OTHER";
  table.back().key = "other";
  EXPECT_EQ(CheckSettingsTable(table).message(),
            "settings table: other: the key must be \"section.name\"");
  table.back().key = "server.other";
  table.back().arg.clear();
  EXPECT_EQ(CheckSettingsTable(table).message(),
            "settings table: server.other: a flag without a value name must set flag_value");
  table.back().arg = "PATH";
  EXPECT_TRUE(CheckSettingsTable(table).ok()) << CheckSettingsTable(table);
}

TEST(Settings, DidYouMeanSuggestsOnlyCloseKeys) {
  EXPECT_EQ(DidYouMean("cach_dir", {"cache.dir", "cache.max_mb"}), "cache.dir");
  EXPECT_EQ(DidYouMean("--cach-dir", {"--cache-dir", "--clang"}), "--cache-dir");
  EXPECT_EQ(DidYouMean("banana", {"cache.dir", "cache.max_mb"}), "");
}

}  // namespace
}  // namespace coopd

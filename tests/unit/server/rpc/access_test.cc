// The tokens file (server/rpc/access.h): its format, its errors (which never quote a token), and
// the file-mode rule. Calls through a real daemon: tests/integration/access_test.cc.
#include "server/rpc/access.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "server/util/sha256.h"

namespace coopd {
namespace {

constexpr char kSecret[] = "s3cr3t-token-value-0123456789";

TEST(Tokens, ParsesRolesNamesAndDigestsSkippingCommentsAndBlankLines) {
  auto t = ParseTokens(
      "# farm tokens\n\nread   ci-read  rrrrrrrrrrrrrrrrrrrr\n"
      "compile\tbuilder " +
          std::string(kSecret) + "\r\n  admin ops@example.org aaaaaaaaaaaaaaaaaaaa",
      "tokens");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].role, Role::kRead);
  EXPECT_EQ((*t)[0].name, "ci-read");
  EXPECT_EQ((*t)[1].role, Role::kCompile);
  EXPECT_EQ((*t)[1].name, "builder");
  EXPECT_EQ((*t)[1].digest, Sha256::Digest(kSecret)) << "only the digest is kept";
  EXPECT_EQ((*t)[2].role, Role::kAdmin);
  EXPECT_EQ((*t)[2].name, "ops@example.org");
}

TEST(Tokens, ErrorsNameTheLineAndTheFieldAndNeverTheToken) {
  const std::string s = kSecret;
  const struct {
    std::string text, error;
  } cases[] = {
      {"read ci " + s + " extra", "f:1: expected ROLE NAME TOKEN (3 fields), got 4"},
      {"# c\nwrite ci " + s, "f:2: role must be one of read, compile, admin; got \"write\""},
      {"read c/i " + s,
       "f:1: name must be 1..64 of the characters A-Z a-z 0-9 . _ @ -; got \"c/i\""},
      {"read ci short", "f:1: the token of \"ci\" must be 16..512 bytes, got 5"},
      {"read ci " + s + "\xc3\xa9",
       "f:1: the token of \"ci\" must be printable ASCII without "
       "spaces (e.g. openssl rand -hex 32)"},
      {"read ci " + s + "\nadmin ci aaaaaaaaaaaaaaaaaaaa",
       "f:2: the name \"ci\" is given a second time"},
      {"read ci " + s + "\nadmin ops " + s,
       "f:2: the token of \"ops\" is also the token of \"ci\""},
      {"# nothing\n\n", "f: holds no tokens (one ROLE NAME TOKEN per line; docs/security.md)"},
  };
  for (const auto& c : cases) {
    auto t = ParseTokens(c.text, "f");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(), c.error);
    EXPECT_EQ(std::string(t.status().message()).find(s), std::string::npos);
  }
}

TEST(Tokens, AFileOthersMayReadIsRefusedAndOneForTheOwnerIsLoaded) {
  char dir[] = "/tmp/coopd-tokens-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/tokens";
  std::ofstream(path) << "admin ops " << kSecret << "\n";
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  auto refused = LoadTokensFile(path, "--tokens-file");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "--tokens-file \"" + path +
                "\": others may access it (mode 0644), and it holds secrets: chmod 600 (or 640 "
                "for a group) and start again");
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  auto loaded = LoadTokensFile(path, "--tokens-file");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)[0].name, "ops");
  auto missing = LoadTokensFile(std::string(dir) + "/none", "--tokens-file");
  EXPECT_EQ(missing.status().message(), "--tokens-file \"" + std::string(dir) +
                                            "/none\": cannot open: No such file or directory");
  auto not_regular = LoadTokensFile(dir, "--tokens-file");
  EXPECT_EQ(not_regular.status().message(),
            "--tokens-file \"" + std::string(dir) + "\": not a regular file");
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(Tokens, RolesNest) {
  EXPECT_LT(Role::kRead, Role::kCompile);
  EXPECT_LT(Role::kCompile, Role::kAdmin);
  EXPECT_STREQ(RoleName(Role::kRead), "read");
  EXPECT_STREQ(RoleName(Role::kCompile), "compile");
  EXPECT_STREQ(RoleName(Role::kAdmin), "admin");
}

}  // namespace
}  // namespace coopd

// Integration tests of the compile sandbox (issue 14, item 1; engine/sandbox.h): a user
// operator that #includes a file outside the header roots fails with INVALID_ARGUMENT and an
// error that holds none of the file, for NVRTC and for clang; without the sandbox it leaks
// (the control); on a kernel without Landlock coopd warns (auto) or refuses to start (require).
// A real coopd on a temporary socket; the kernel's own Landlock.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "coop/client.h"
#include "test_util.h"

namespace coopd_test {
namespace {

constexpr char kSecretContents[] = "COOPD-SECRET-FILE-CONTENTS-7f3a";
constexpr char kSecretEnv[] = "COOPD-SECRET-ENV-VALUE-91c2";

// A file no compile may read, in a directory of its own under /tmp.
struct SecretFile {
  TempDir dir;
  std::string path = dir.path() + "/secret.h";
  SecretFile() { std::ofstream(path) << kSecretContents << "\n"; }
};

// `path` reached from any directory by way of "..": the compilers resolve it against their
// working directory (the clang work directory, the daemon's directory for NVRTC).
std::string Relative(const std::string& path) {
  std::string up;
  for (int i = 0; i < 16; ++i) up += "../";
  return up + path.substr(1);
}

// block_reduce reduce float32 with an operator that includes `include` when `guard` holds.
coop::Spec IncludingSpec(const std::string& include, const std::string& guard) {
  coop::Spec s = BlockReduceF32();
  s.method = "reduce";
  s.block = {128};
  s.user_op.name = "evil";
  s.user_op.source = "#if " + guard + "\n#include \"" + include +
                     "\"\n#endif\n__device__ float evil(float a, float b) { return a + b; }\n";
  return s;
}

class Sandbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // In the daemon's environment (its workers inherit it): /proc/self/environ would show it.
    setenv("COOPD_TEST_SECRET", kSecretEnv, 1);
    daemon_ = new TestDaemon();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  // Every include is refused: INVALID_ARGUMENT naming the file, none of its contents. The
  // refusal is one of `refusals`: "not found" in the worker's private root, "Permission denied"
  // from Landlock where no mount namespace can be made (docs/security.md, "Existence").
  static void ExpectRefused(const std::string& guard, coop::Formats formats,
                            const std::vector<std::string>& refusals) {
    SecretFile secret;
    const std::vector<std::string> includes = {"/etc/passwd", "/proc/self/environ", secret.path,
                                               Relative(secret.path)};
    for (const std::string& include : includes) {
      auto r = daemon_->Client().Specialize(IncludingSpec(include, guard), formats);
      ASSERT_FALSE(r.ok()) << include;
      const std::string& m = r.error().message;
      EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument) << m;
      EXPECT_TRUE(std::any_of(refusals.begin(), refusals.end(), [&](const std::string& x) {
        return m.find(x) != std::string::npos;
      })) << m;
      EXPECT_NE(m.find("compiles are confined"), std::string::npos) << m;
      EXPECT_EQ(m.find("root:x:0:0"), std::string::npos) << m;
      EXPECT_EQ(m.find(kSecretEnv), std::string::npos) << m;
      EXPECT_EQ(m.find(kSecretContents), std::string::npos) << m;
      // A compiler diagnostic is the user's error: no note blaming the worker memory limit.
      EXPECT_EQ(m.find("the failure may be that limit"), std::string::npos) << m;
    }
  }

  static TestDaemon* daemon_;
};
TestDaemon* Sandbox::daemon_ = nullptr;

TEST_F(Sandbox, NvrtcCannotIncludeFilesOutsideTheHeaderRoots) {
  ExpectRefused("defined(__CUDACC_RTC__)", coop::Formats::kLtoIr, {"cannot open source file"});
}

TEST_F(Sandbox, ClangCannotIncludeFilesOutsideTheHeaderRoots) {
  auto catalog = daemon_->Client().GetCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  if (catalog->bitcode_archs.empty()) GTEST_SKIP() << "no clang-22 on this machine";
  ExpectRefused("defined(__clang__)", coop::Formats::kBitcode,
                {"' file not found", "cannot open file"});
}

TEST_F(Sandbox, ConfinedCompilesStillServeBothFormatsWithTheirPrecompiledHeaders) {
  auto catalog = daemon_->Client().GetCatalog();
  ASSERT_TRUE(catalog.ok());
  const coop::Formats formats =
      catalog->bitcode_archs.empty() ? coop::Formats::kLtoIr : coop::Formats::kBoth;
  coop::Spec s = BlockReduceF32();
  s.block = {64};
  auto r = daemon_->Client().Specialize(s, formats);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->ltoir.empty());
  EXPECT_GT(r->temp_storage_bytes, 0u);
  // A second spec reuses the precompiled headers the confined workers wrote.
  s.block = {96};
  auto again = daemon_->Client().Specialize(s, formats);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->pch_status, "used");
  if (formats == coop::Formats::kBoth) {
    EXPECT_EQ(again->bitcode.pch_status, "used");
  }
  EXPECT_NE(daemon_->process.Log().find("compile sandbox: Landlock ABI"), std::string::npos)
      << daemon_->process.Log();
}

// The control: the same request leaks the file when the sandbox is off, and coopd says so.
TEST(SandboxOff, LeaksTheFileAndWarnsAtStart) {
  TestDaemon d({"--sandbox", "off"});
  SecretFile secret;
  auto r = d.Client().Specialize(IncludingSpec(secret.path, "1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(kSecretContents), std::string::npos) << r.error().message;
  EXPECT_NE(d.process.Log().find("warning coopd: compile sandbox OFF (--sandbox off)"),
            std::string::npos)
      << d.process.Log();
}

TEST(SandboxWithoutLandlock, AutoWarnsAndKeepsServing) {
  TempDir dir;
  CoopdProcess p(dir.path() + "/coopd.sock", dir.path() + "/cache");
  p.without_landlock = true;
  std::string error;
  ASSERT_TRUE(p.Start(&error)) << error;
  ASSERT_TRUE(p.WaitReady(std::chrono::seconds(120), &error)) << error << p.Log();
  EXPECT_NE(p.Log().find("warning coopd: compile sandbox DEGRADED: Landlock is unavailable (the "
                         "kernel has no Landlock (ENOSYS"),
            std::string::npos)
      << p.Log();
  auto r = p.MakeClient().Specialize(BlockReduceF32());
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(p.Stop(), 0);
}

TEST(SandboxWithoutLandlock, RequireRefusesToStart) {
  TempDir dir;
  CoopdProcess p(dir.path() + "/coopd.sock", dir.path() + "/cache", {"--sandbox", "require"});
  p.without_landlock = true;
  std::string error;
  ASSERT_TRUE(p.Start(&error)) << error;
  EXPECT_EQ(p.WaitExit(std::chrono::seconds(120)), 1);
  EXPECT_NE(p.Log().find("coopd: compile sandbox: --sandbox require, but Landlock is "
                         "unavailable: the kernel has no Landlock (ENOSYS"),
            std::string::npos)
      << p.Log();
}

TEST(SandboxFlag, BadModeNamesTheAllowedOnes) {
  std::string out, err;
  EXPECT_EQ(RunCommand({COOPD_BINARY, "--sandbox", "strict"}, &out, &err), 2);
  EXPECT_NE(err.find("--sandbox: must be one of auto, require, off; got \"strict\""),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace coopd_test

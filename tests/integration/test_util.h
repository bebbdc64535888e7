// test_util.h: helpers shared by the integration tests.
#pragma once

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coop/client.h"
#include "coopd_process.h"

namespace coopd_test {

// A coopd started (and waited for) on construction, stopped with SIGTERM on destruction; the
// test fails if it does not start or does not exit cleanly. Socket and cache live in `dir`, or
// in a temporary directory of its own.
struct TestDaemon {
  explicit TestDaemon(std::vector<std::string> args = {});
  TestDaemon(const std::string& dir, std::vector<std::string> args);
  ~TestDaemon();
  coop::Client Client() const { return process.MakeClient(); }
  coop::Stats Stats() const;
  const coop::TierStats* Disk(const coop::Stats& s) const;

  std::unique_ptr<TempDir> owned_dir;  // set when no directory was given
  CoopdProcess process;
  bool started = false;

 private:
  TestDaemon(std::unique_ptr<TempDir> dir, std::vector<std::string> args);
};

// Runs `sql` on the database file with the sqlite3 CLI (as a user would, beside a running coopd;
// 5 s busy timeout); fails the calling test if it fails. Returns stdout without trailing newlines.
std::string Sqlite3(const std::string& db, const std::string& sql);

// A second process, the sqlite3 CLI, holding an exclusive transaction (the write lock) on a
// database until Release() or destruction (closing its stdin ends it, rolling it back).
// `lock_sql` takes the lock ("BEGIN IMMEDIATE;": a RESERVED lock); held() is false when it
// failed.
class SqliteLockHolder {
 public:
  explicit SqliteLockHolder(const std::string& db,
                            const std::string& lock_sql = "BEGIN EXCLUSIVE;");
  ~SqliteLockHolder() { Release(); }
  SqliteLockHolder(const SqliteLockHolder&) = delete;
  SqliteLockHolder& operator=(const SqliteLockHolder&) = delete;
  bool held() const { return held_; }
  const std::string& output() const { return output_; }
  void Release();

 private:
  int pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  std::string output_;
  bool held_ = false;
};

// A tmpfs of `size` (mount's syntax: "24m") mounted on `path` (created) until destruction.
// Needs root and mount rights: mounted() is false otherwise, and error() says why.
class ScopedTmpfs {
 public:
  ScopedTmpfs(const std::string& path, const std::string& size);
  ~ScopedTmpfs();
  ScopedTmpfs(const ScopedTmpfs&) = delete;
  ScopedTmpfs& operator=(const ScopedTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_, error_;
  bool mounted_ = false;
};

// A spec of a block_* family for sm_90.
coop::Spec BlockSpec(const std::string& family, const std::string& method, const std::string& dtype,
                     coop::Dim3 block, uint32_t items);

// block_reduce sum float32, 256 threads, sm_90: the README's example.
// Skips the calling test, saying why, when the CCCL headers at `root` (deploy/install-deps.sh
// unpacks the newer CCCLs into .deps/) lack block_topk; with COOPD_REQUIRE_NEWER_CCCL=1 (CI)
// that is a failure instead. `what` names them ("CCCL 3.5").
#define REQUIRE_CCCL_HEADERS(root, what)                                             \
  do {                                                                               \
    if (!std::filesystem::exists(std::string(root) + "/cub/block/block_topk.cuh")) { \
      const char* required = std::getenv("COOPD_REQUIRE_NEWER_CCCL");                \
      ASSERT_FALSE(required != nullptr && std::string(required) == "1")              \
          << what << " headers missing at " << root;                                 \
      GTEST_SKIP() << what << " headers not found at " << root                       \
                   << " (run deploy/install-deps.sh); not tested against them";      \
    }                                                                                \
  } while (0)

coop::Spec BlockReduceF32();

// Requests BlockReduceF32() through `client` in the background and returns once the daemon has
// counted the request: in a fresh daemon the first compile builds its PCH, so the request is
// then seconds of work in flight (to signal the daemon during). Fails the calling test if the
// daemon does not answer GetStats.
std::future<coop::Result<coop::Artifact>> StartFirstCompile(coop::Client& client);

// Compiles CUDA source to LTO-IR (or, with `ptx`, relocatable PTX) for `arch` with NVRTC; fails
// the calling test (with NVRTC's log) if it does not compile.
std::string CompileKernel(const std::string& source, bool ptx = false,
                          const std::string& arch = "sm_90");

// Links LTO-IR modules to PTX for sm_90 with nvJitLink; fails the test on a link error.
std::string LinkToPtx(const std::vector<std::string>& ltoir_modules);

// A kernel that calls a block_reduce sum float32 entry over 256-thread blocks.
std::string BlockSumKernel(const coop::Artifact& artifact);

// A kernel `call_entries(unsigned char* g)` that calls every entry of the artifact once, with
// arguments of the types its declaration states: a pointer parameter gets a 64-element local
// array read from g (and written back unless const), a scalar a value read from g, temp_storage
// a __shared__ buffer of the largest part's size and alignment, and a result is stored to g.
// Compiling and linking it proves each declaration is callable as declared and resolves.
std::string CallEveryEntryKernel(const coop::Artifact& artifact);

// Compiles CallEveryEntryKernel(artifact) and links it with the artifact's LTO-IR into an sm_90
// cubin; fails the calling test (naming `what`) if either step fails.
void ExpectEntriesLinkIntoACubin(const coop::Artifact& artifact, const std::string& what);

// One row of a layout-truth table (tests/tools/layout_truth*.cu, built by nvcc): a spec for sm_90
// and the sizeof/alignof of its TempStorage as nvcc's host pass sees them.
struct TruthRow {
  coop::Spec spec;
  uint64_t bytes = 0, align = 0;
  std::string line;
};

// Runs a layout-truth binary and parses its rows; fails the calling test on a bad line.
std::vector<TruthRow> LoadLayoutTruth(const std::string& binary);

// Sends `body` as the request of `method` ("/coop.v1.Coop/Specialize") on a raw channel
// (grpc::GenericStub) to the coopd on `socket`, with `metadata` (key, value pairs), and returns
// its status (60 s deadline).
grpc::Status RawCall(const std::string& socket, const std::string& method, const std::string& body,
                     const std::vector<std::pair<std::string, std::string>>& metadata = {});
// The same on any channel (a TCP port with TLS).
grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& body,
                     const std::vector<std::pair<std::string, std::string>>& metadata = {});

// The process ids of `parent`'s children (coopd's compile workers).
std::vector<pid_t> Children(pid_t parent);

// A compile worker's own temporary directory (its TMPDIR): the --worker-temp the daemon gave it,
// from /proc/<pid>/cmdline; "" when unknown.
std::string WorkerTmpdir(pid_t worker);

// Stops coopd's compile workers (SIGSTOP) until destruction, so the compiles they are given stay
// in flight for as long as a test needs, whatever the machine's speed.
class StoppedWorkers {
 public:
  explicit StoppedWorkers(pid_t coopd) : pids_(Children(coopd)) {
    for (pid_t p : pids_) kill(p, SIGSTOP);
  }
  ~StoppedWorkers() { Resume(); }
  void Resume() {
    for (pid_t p : pids_) kill(p, SIGCONT);
    pids_.clear();
  }
  size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace coopd_test

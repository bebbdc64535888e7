#include "test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "server/engine/compiler.h"

namespace coopd_test {

// Clients in these tests never start a daemon of their own (coop::ClientOptions::autostart),
// whoever runs the binary; the tests of auto-start unset this.
[[maybe_unused]] const bool kNoAutostart = setenv("COOPD_NO_AUTOSTART", "1", 0) == 0;

std::string Sqlite3(const std::string& db, const std::string& sql) {
  std::string out, err;
  int rc = RunCommand({"/usr/bin/sqlite3", "-cmd", ".timeout 5000", db, sql}, &out, &err);
  EXPECT_EQ(rc, 0) << err;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

SqliteLockHolder::SqliteLockHolder(const std::string& db, const std::string& lock_sql) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    // -bail: a statement that fails (the lock not taken) ends the CLI before it says "held".
    execl("/usr/bin/sqlite3", "sqlite3", "-bail", db.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  stdin_ = in[1];
  stdout_ = out[0];
  if (pid_ < 0) return;
  // The CLI flushes each result, so "held" arrives once the lock is taken.
  const std::string sql = lock_sql + "\nSELECT 'held';\n";
  if (write(stdin_, sql.data(), sql.size()) != static_cast<ssize_t>(sql.size())) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (output_.find("held\n") == std::string::npos && std::chrono::steady_clock::now() < end) {
    pollfd p{stdout_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = read(stdout_, buf, sizeof(buf));
    if (n <= 0) break;
    output_.append(buf, static_cast<size_t>(n));
  }
  held_ = output_.find("held\n") != std::string::npos;
}

void SqliteLockHolder::Release() {
  if (stdin_ >= 0) close(stdin_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
  if (stdout_ >= 0) close(stdout_);
  stdin_ = stdout_ = pid_ = -1;
  held_ = false;
}

ScopedTmpfs::ScopedTmpfs(const std::string& path, const std::string& size) : path_(path) {
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  const std::string options = "size=" + size;
  mounted_ = mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
  if (!mounted_) {
    error_ = "cannot mount a tmpfs here (" + std::string(std::strerror(errno)) +
             "); this test needs root and mount rights";
  }
}

ScopedTmpfs::~ScopedTmpfs() {
  if (mounted_) umount2(path_.c_str(), MNT_DETACH);
}

TestDaemon::TestDaemon(std::vector<std::string> args)
    : TestDaemon(std::make_unique<TempDir>(), std::move(args)) {}

TestDaemon::TestDaemon(std::unique_ptr<TempDir> dir, std::vector<std::string> args)
    : TestDaemon(dir->path(), std::move(args)) {
  owned_dir = std::move(dir);
}

TestDaemon::TestDaemon(const std::string& dir, std::vector<std::string> args)
    : process(dir + "/coopd.sock", dir + "/cache", std::move(args)) {
  std::string error;
  started = process.Start(&error) && process.WaitReady(std::chrono::seconds(120), &error);
  EXPECT_TRUE(started) << error;
}

TestDaemon::~TestDaemon() {
  if (started && process.pid() > 0) {
    EXPECT_EQ(process.Stop(SIGTERM), 0) << process.Log();
  }
}

coop::Stats TestDaemon::Stats() const {
  auto s = Client().GetStats();
  EXPECT_TRUE(s) << s.error().message;
  return s ? *s : coop::Stats{};
}

const coop::TierStats* TestDaemon::Disk(const coop::Stats& s) const {
  for (const auto& t : s.tiers) {
    if (t.name == "disk") return &t;
  }
  return nullptr;
}

coop::Spec BlockSpec(const std::string& family, const std::string& method, const std::string& dtype,
                     coop::Dim3 block, uint32_t items) {
  coop::Spec s;
  s.family = family;
  s.method = method;
  s.dtype = dtype;
  s.block = block;
  s.items_per_thread = items;
  s.arch = "sm_90";
  return s;
}

std::future<coop::Result<coop::Artifact>> StartFirstCompile(coop::Client& client) {
  auto pending =
      std::async(std::launch::async, [&client] { return client.Specialize(BlockReduceF32()); });
  for (;;) {
    auto s = client.GetStats();
    if (!s) {
      ADD_FAILURE() << "GetStats: " << s.error().message;
      break;
    }
    if (s->requests >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pending;
}

coop::Spec BlockReduceF32() {
  coop::Spec s;
  s.family = "block_reduce";
  s.method = "sum";
  s.dtype = "float32";
  s.block = {256};
  s.arch = "sm_90";
  return s;
}

std::string CompileKernel(const std::string& source, bool ptx, const std::string& arch) {
  nvrtcProgram prog = nullptr;
  EXPECT_EQ(nvrtcCreateProgram(&prog, source.c_str(), "kernel.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const std::string arch_option = "-arch=" + arch;
  // The toolkit's include directory, for kernels that use <cuda_fp16.h> and friends.
  const std::string include_option = "-I" CUDA_INCLUDE_DIR;
  std::vector<const char*> opts = {"-rdc=true", arch_option.c_str(), include_option.c_str()};
  if (!ptx) opts.push_back("-dlto");
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(prog, log.data());
  EXPECT_EQ(r, NVRTC_SUCCESS) << log;
  std::string out;
  size_t size = 0;
  if (ptx) {
    nvrtcGetPTXSize(prog, &size);
    out.resize(size);
    nvrtcGetPTX(prog, out.data());
    if (!out.empty() && out.back() == '\0') out.pop_back();
  } else {
    nvrtcGetLTOIRSize(prog, &size);
    out.resize(size);
    nvrtcGetLTOIR(prog, out.data());
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

std::string LinkToPtx(const std::vector<std::string>& modules) {
  nvJitLinkHandle h = nullptr;
  const char* opts[] = {"-arch=sm_90", "-lto", "-ptx"};
  EXPECT_EQ(nvJitLinkCreate(&h, 3, opts), NVJITLINK_SUCCESS);
  for (const auto& m : modules) {
    EXPECT_EQ(nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, m.data(), m.size(), "module"),
              NVJITLINK_SUCCESS);
  }
  std::string ptx;
  if (nvJitLinkComplete(h) == NVJITLINK_SUCCESS) {
    size_t n = 0;
    nvJitLinkGetLinkedPtxSize(h, &n);
    ptx.resize(n);
    nvJitLinkGetLinkedPtx(h, ptx.data());
  } else {
    size_t n = 0;
    nvJitLinkGetErrorLogSize(h, &n);
    std::string log(n, '\0');
    nvJitLinkGetErrorLog(h, log.data());
    ADD_FAILURE() << "link to PTX failed: " << log;
  }
  nvJitLinkDestroy(&h);
  return ptx;
}

std::string BlockSumKernel(const coop::Artifact& a) {
  const auto& e = a.parts.at(0).entries.at(0);
  return e.declaration + "\n" +
         "extern \"C\" __global__ void block_sums(const float* in, float* out) {\n"
         "  __shared__ __align__(" +
         std::to_string(a.parts[0].temp_storage_align) + ") unsigned char temp[" +
         std::to_string(a.parts[0].temp_storage_bytes) +
         "];\n"
         "  float v = in[blockIdx.x * 256 + threadIdx.x];\n"
         "  float r = " +
         e.symbol +
         "(temp, v);\n"
         "  if (threadIdx.x == 0) out[blockIdx.x] = r;\n"
         "}\n";
}

std::string CallEveryEntryKernel(const coop::Artifact& a) {
  uint64_t bytes = 1, align = 1;
  for (const auto& p : a.parts) {
    bytes = std::max(bytes, p.temp_storage_bytes);
    align = std::max(align, p.temp_storage_align);
  }
  std::string decls = a.type_definitions, body;  // user types first, then the declarations
  int n = 0;  // names the locals and the offset in g each scalar is read from
  for (const auto& e : a.entries) {
    decls += e.declaration + "\n";
    const std::string& d = e.declaration;
    const size_t device = d.find("__device__ ") + 11;
    const std::string result = d.substr(device, d.find(" " + e.symbol + "(") - device);
    const size_t open = d.find('(') + 1;
    std::string params = d.substr(open, d.rfind(')') - open) + ", ";
    std::string args, after;
    for (size_t pos = 0, next; (next = params.find(", ", pos)) != std::string::npos;
         pos = next + 2) {
      const std::string param = params.substr(pos, next - pos);
      std::string type = param.substr(0, param.rfind(' '));
      const std::string v = "v" + std::to_string(n++);
      if (type == "void*") {
        args += ", temp";
        continue;
      }
      const bool is_const = type.rfind("const ", 0) == 0;
      if (is_const) type = type.substr(6);
      if (type.back() == '*') {
        type.pop_back();
        body += "  " + type + " " + v + "[64];\n  for (int i = 0; i < 64; ++i) " + v +
                "[i] = reinterpret_cast<const " + type + "*>(g)[threadIdx.x * 64 + i];\n";
        if (!is_const) {
          after += "  for (int i = 0; i < 64; ++i) reinterpret_cast<" + type +
                   "*>(g)[threadIdx.x * 64 + i] = " + v + "[i];\n";
        }
      } else {
        body += "  " + type + " " + v + " = *reinterpret_cast<const " + type + "*>(g + " +
                std::to_string(8 * n) + ");\n";
      }
      args += ", " + v;
    }
    const std::string call = e.symbol + "(" + args.substr(2) + ")";
    body += result == "void"
                ? "  " + call + ";\n"
                : "  reinterpret_cast<" + result + "*>(g)[threadIdx.x] = " + call + ";\n";
    body += after;
  }
  return decls + "extern \"C\" __global__ void call_entries(unsigned char* g) {\n" +
         "  __shared__ __align__(" + std::to_string(align) + ") unsigned char temp[" +
         std::to_string(bytes) + "];\n" + body + "}\n";
}

void ExpectEntriesLinkIntoACubin(const coop::Artifact& a, const std::string& what) {
  const std::string kernel = CallEveryEntryKernel(a);
  const std::string kernel_ltoir = CompileKernel(kernel);
  ASSERT_FALSE(kernel_ltoir.empty()) << what << ":\n" << kernel;
  auto cubin = coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "kernel", kernel_ltoir},
                                 {coopd::LinkInput::kLtoIr, "artifact", a.ltoir}},
                                "sm_90", {"-optimize-unused-variables"});
  ASSERT_TRUE(cubin.ok()) << what << ": " << cubin.status() << "\n" << kernel;
  EXPECT_NE(cubin->find("call_entries"), std::string::npos) << what;
}

std::vector<TruthRow> LoadLayoutTruth(const std::string& binary) {
  std::string out, err;
  int rc = RunCommand({binary}, &out, &err);
  EXPECT_EQ(rc, 0) << err;
  std::vector<TruthRow> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    TruthRow r;
    r.line = line;
    int bx, by, bz, items, warp;
    std::string algorithm;
    std::string options;
    f >> r.spec.family >> r.spec.method >> r.spec.dtype >> bx >> by >> bz >> items >> algorithm >>
        warp >> r.bytes >> r.align >> options;
    EXPECT_FALSE(f.fail()) << "bad line: " << line;
    std::istringstream opts(options == "-" ? "" : options);
    for (std::string kv; std::getline(opts, kv, ',');) {
      const std::string key = kv.substr(0, kv.find('=')), value = kv.substr(kv.find('=') + 1);
      if (key == "op") {
        r.spec.op = value;
      } else if (key == "radix_sort.value_dtype") {
        r.spec.radix_sort.value_dtype = value;
      } else if (key == "radix_sort.radix_bits") {
        r.spec.radix_sort.radix_bits = static_cast<uint32_t>(std::stoul(value));
      } else if (key == "merge_sort.value_dtype") {
        r.spec.merge_sort.value_dtype = value;
      } else if (key == "top_k.value_dtype") {
        r.spec.top_k.value_dtype = value;
      } else if (key == "radix_rank.radix_bits") {
        r.spec.radix_rank.radix_bits = static_cast<uint32_t>(std::stoul(value));
      } else if (key == "run_length_decode.decoded_items_per_thread") {
        r.spec.run_length_decode.decoded_items_per_thread =
            static_cast<uint32_t>(std::stoul(value));
      } else if (key == "histogram.bins") {
        r.spec.histogram.bins = static_cast<uint32_t>(std::stoul(value));
      } else if (key == "user_type") {  // SIZExALIGN
        r.spec.user_type_size = static_cast<uint32_t>(std::stoul(value.substr(0, value.find('x'))));
        r.spec.user_type_align =
            static_cast<uint32_t>(std::stoul(value.substr(value.find('x') + 1)));
      } else {
        ADD_FAILURE() << "unknown option " << kv << " in " << line;
      }
    }
    if (bx > 0)
      r.spec.block = {static_cast<uint32_t>(bx), static_cast<uint32_t>(by),
                      static_cast<uint32_t>(bz)};
    r.spec.items_per_thread = static_cast<uint32_t>(items);
    if (algorithm != "-") r.spec.algorithm = algorithm;
    r.spec.warp_threads = static_cast<uint32_t>(warp);
    r.spec.arch = "sm_90";
    rows.push_back(r);
  }
  return rows;
}

grpc::Status RawCall(const std::string& socket, const std::string& method, const std::string& body,
                     const std::vector<std::pair<std::string, std::string>>& metadata) {
  return RawCall(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()), method,
                 body, metadata);
}

grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& body,
                     const std::vector<std::pair<std::string, std::string>>& metadata) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  for (const auto& [key, value] : metadata) ctx.AddMetadata(key, value);
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1), reply;
  grpc::Status status;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &reply, [&](grpc::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    status = std::move(s);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return status;
}

std::string WorkerTmpdir(pid_t worker) {
  std::ifstream in("/proc/" + std::to_string(worker) + "/cmdline", std::ios::binary);
  std::string arg;
  bool next = false;
  while (std::getline(in, arg, '\0')) {
    if (next) return arg;
    next = arg == "--worker-temp";
  }
  return "";
}

std::vector<pid_t> Children(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(line.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      out.push_back(pid);
    }
  }
  closedir(proc);
  return out;
}

}  // namespace coopd_test

#include "server/engine/bitcode.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/catalog/spec.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"
#include "server/util/subprocess.h"

namespace coopd {
namespace {

namespace fs = std::filesystem;

constexpr char kWorkspacePrefix[] = "coopd-clang-";
constexpr char kPchHeader[] = "coop_pch.cuh";  // in pch/: includes the prelude
constexpr char kUnit[] = "coop_unit.cu";       // the name clang's messages and the IR carry

std::string TempRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

absl::Status WriteFile(const fs::path& p, const std::string& contents) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return absl::FailedPreconditionError(StrCat("cannot write ", p.string()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return absl::InternalError(StrCat("cannot read ", p.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The semantic options with the placeholder replaced by the workspace's include directory,
// relative to a work directory (so nothing of the daemon's paths reaches clang's output).
std::vector<std::string> Resolve(const std::vector<std::string>& options) {
  std::vector<std::string> out;
  for (const auto& o : options) out.push_back(o == kDeviceIncludePlaceholder ? "-I../include" : o);
  return out;
}

struct Clang {
  const BitcodeJob& job;
  std::string work;  // this worker's scratch directory

  absl::StatusOr<ProcessResult> Run(std::vector<std::string> args) const {
    args.insert(args.begin(), job.clang);
    ProcessOptions options;
    options.cwd = work;
    return RunProcess(args, options);
  }

  // Builds the precompiled header for the job's options unless it exists; one worker builds it
  // while the others wait on its lock. Returns its path, and sets *created when this call built
  // it. An error says why there is none (the compile then goes on without).
  absl::StatusOr<std::string> EnsurePch(bool* created) const {
    *created = false;
    Sha256 h;
    h.UpdateField(job.identity);
    for (const auto& o : job.options) h.UpdateField(o);
    const std::string name = h.FinishHex().substr(0, 24);
    const fs::path dir = fs::path(job.workspace) / "pch";
    const fs::path pch = dir / (name + ".pch");
    std::error_code ec;
    if (fs::exists(pch, ec)) return pch.string();
    const std::string lock_path = (dir / (name + ".lock")).string();
    const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
      return absl::InternalError(StrCat("cannot open ", lock_path, ": ", strerror(errno)));
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    struct Unlock {
      int fd;
      ~Unlock() { close(fd); }  // releases the flock
    } unlock{fd};
    if (fs::exists(pch, ec)) return pch.string();  // built while we waited
    const fs::path tmp = dir / StrCat(name, ".pch.", getpid(), ".tmp");
    std::vector<std::string> args = Resolve(job.options);
    for (const char* a : {"-emit-llvm", "-c", "-Xclang", "-emit-pch", "-o"}) args.push_back(a);
    args.push_back(tmp.string());
    args.push_back(StrCat("../pch/", kPchHeader));
    auto r = Run(args);
    if (!r.ok()) return r.status();
    if (!r->ok()) {
      fs::remove(tmp, ec);
      return absl::InternalError(StrCat("clang ", r->Describe(), " building it: ", r->err));
    }
    fs::rename(tmp, pch, ec);
    if (ec) return absl::InternalError(StrCat("cannot rename ", tmp.string(), ": ", ec.message()));
    *created = true;
    return pch.string();
  }
};

}  // namespace

std::vector<std::string> ClangSemanticOptions(const Toolchain& tc, const std::string& arch) {
  // As measured against CuTe DSL 4.8.1 (BRIEF.md section 4): -O3 (its libNVVM rejects the
  // explicit alignment of -O0 code), 32-bit shared-memory pointers, no libdevice (the wrappers
  // need none). --cuda-path gives clang the toolkit's headers, which NVRTC sees through
  // -I<cuda>/include; CUDA 13 is newer than clang 22 knows, hence the warning's silence.
  const std::string cuda_path = fs::path(tc.cuda_include).parent_path().string();
  std::vector<std::string> options = {"-x",
                                      "cuda",
                                      "--cuda-device-only",
                                      "--cuda-gpu-arch=" + arch,
                                      "-fcuda-short-ptr",
                                      "-O3",
                                      "-std=c++17",
                                      "--cuda-path=" + cuda_path,
                                      "-nocudalib",
                                      "-Wno-unknown-cuda-version",
                                      "-I" + tc.cccl_include,
                                      kDeviceIncludePlaceholder};
  if (!tc.clang.newest_cuda_known.empty()) {
    // Without an SDK version clang parses `k<<<...>>>` with the pre-CUDA-9.2 launch API, which
    // CUDA 13 no longer declares (CCCL 3.3's thrust launch helpers fail on cudaConfigureCall).
    options.push_back("-Xclang");
    options.push_back("-target-sdk-version=" + tc.clang.newest_cuda_known);
  }
  return options;
}

std::vector<std::string> BitcodeArchs(const Toolchain& tc) {
  std::vector<std::string> out;
  if (!tc.clang.available()) return out;
  for (const auto& a : ArchNames(tc.supported_archs)) {
    if (std::find(tc.clang.gpu_archs.begin(), tc.clang.gpu_archs.end(), a) !=
        tc.clang.gpu_archs.end()) {
      out.push_back(a);
    }
  }
  return out;
}

absl::Status CompareLayouts(const std::string& what, const std::vector<Layout>& nvrtc,
                            const std::vector<Layout>& clang) {
  if (nvrtc.size() != clang.size()) {
    return absl::InternalError(StrCat(what, ": NVRTC reported ", nvrtc.size(),
                                      " TempStorage layouts, clang ", clang.size()));
  }
  for (size_t i = 0; i < nvrtc.size(); ++i) {
    if (nvrtc[i].bytes != clang[i].bytes || nvrtc[i].align != clang[i].align) {
      return absl::InternalError(
          StrCat(what, ": TempStorage layout differs between the compilers",
                 nvrtc.size() > 1 ? StrCat(" in part ", i) : std::string(), ": NVRTC ",
                 nvrtc[i].bytes, " bytes aligned to ", nvrtc[i].align, ", clang ", clang[i].bytes,
                 " bytes aligned to ", clang[i].align, "; the bitcode is not served"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> ClangAssembleOptions(const std::string& arch) {
  // The same target, optimization level and pointer width as step 1 (without -fcuda-short-ptr,
  // which the driver passes on only for CUDA input, clang rejects the module's data layout);
  // -O3 again lets the optimizer see the internalized symbols.
  return {"--target=nvptx64-nvidia-cuda",
          "-march=" + arch,
          "-O3",
          "-Xclang",
          "-fcuda-short-ptr",
          "-mllvm",
          "--nvptx-short-ptr",
          "-x",
          "ir",
          "-c",
          "-emit-llvm"};
}

absl::StatusOr<std::unique_ptr<ClangWorkspace>> ClangWorkspace::Create(
    const std::vector<EmbeddedHeader>& headers) {
  const fs::path root = TempRoot();
  std::error_code ec;
  // Workspaces of daemons that were killed (their precompiled headers are tens of MB each).
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kWorkspacePrefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + sizeof(kWorkspacePrefix) - 1));
    if (owner <= 0 || (owner != getpid() && (kill(owner, 0) == 0 || errno != ESRCH))) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
  const fs::path dir = root / StrCat(kWorkspacePrefix, getpid());
  if (!fs::create_directory(dir, ec) || ec) {
    return absl::FailedPreconditionError(StrCat("cannot create the clang workspace ", dir.string(),
                                                ": ",
                                                ec ? ec.message() : std::string("it exists")));
  }
  fs::permissions(dir, fs::perms::owner_all, ec);
  std::unique_ptr<ClangWorkspace> ws(new ClangWorkspace(dir.string()));
  fs::create_directories(dir / "pch", ec);
  for (const auto& h : headers) {
    const fs::path p = dir / "include" / h.name;
    fs::create_directories(p.parent_path(), ec);
    if (absl::Status s = WriteFile(p, h.contents); !s.ok()) return s;
  }
  if (absl::Status s = WriteFile(dir / "pch" / kPchHeader, "#include <coop/device/prelude.cuh>\n");
      !s.ok()) {
    return s;
  }
  return ws;
}

ClangWorkspace::~ClangWorkspace() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

absl::StatusOr<BitcodeOutput> CompileToBitcode(const BitcodeJob& job) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::is_directory(fs::path(job.workspace) / "include", ec)) {
    return absl::FailedPreconditionError(
        StrCat("clang workspace ", job.workspace, " is missing (removed while coopd runs?)"));
  }
  const Clang clang{job, (fs::path(job.workspace) / StrCat("work-", getpid())).string()};
  fs::create_directories(clang.work, ec);
  const fs::path work(clang.work);
  if (absl::Status s = WriteFile(work / kUnit, job.source); !s.ok()) return s;

  BitcodeOutput out;
  std::string pch;
  if (!job.pch) {
    out.pch_status = "off";
  } else {
    bool created = false;
    auto built = clang.EnsurePch(&created);
    if (built.ok()) {
      pch = *built;
      out.pch_status = created ? "created" : "used";
    } else {
      out.pch_status = StrCat("not created: ", built.status().message());
    }
  }
  auto step1 = [&](const std::string& with_pch) {
    std::vector<std::string> args = Resolve(job.options);
    if (!with_pch.empty()) {
      args.push_back("-include-pch");
      args.push_back(with_pch);
    }
    for (const char* a : {"-emit-llvm", "-S", "-o", "-", kUnit}) args.push_back(a);
    return clang.Run(args);
  };
  auto ir = step1(pch);
  if (!ir.ok()) return ir.status();
  if (!ir->ok() && !pch.empty()) {
    // A precompiled header that no longer fits (a header changed under it) must not fail the
    // request: compile without it, and drop it so the next compile builds a fresh one.
    auto plain = step1("");
    if (!plain.ok()) return plain.status();
    if (plain->ok()) {
      fs::remove(pch, ec);
      out.pch_status = StrCat("not used: ", ir->err.substr(0, ir->err.find('\n')));
    }
    ir = std::move(plain);
  }
  if (!ir->ok()) {
    return absl::InternalError(StrCat("clang: compile failed (", ir->Describe(), "):\n", ir->err));
  }
  if (ir->truncated) return absl::InternalError("clang: the module's IR exceeds 64 MiB");
  out.log = ir->err;

  auto rewritten = RewriteIrForBitcode(ir->out, job.entries, job.layouts);
  if (!rewritten.ok()) return rewritten.status();
  for (const auto& [bytes, align] : rewritten->layouts) out.layouts.push_back(Layout{bytes, align});
  out.internalized = std::move(rewritten->internalized);
  if (absl::Status s = WriteFile(work / "coop_unit.ll", rewritten->ir); !s.ok()) return s;

  std::vector<std::string> args = ClangAssembleOptions(job.arch);
  for (const char* a : {"-o", "coop_unit.bc", "coop_unit.ll"}) args.push_back(a);
  auto bc = clang.Run(args);
  if (!bc.ok()) return bc.status();
  if (!bc->ok()) {
    return absl::InternalError(
        StrCat("clang: assembling the rewritten IR failed (", bc->Describe(), "):\n", bc->err));
  }
  auto bytes = ReadFile(work / "coop_unit.bc");
  if (!bytes.ok()) return bytes.status();
  if (bytes->compare(0, 4, "BC\xC0\xDE") != 0) {
    return absl::InternalError("clang: the output is not LLVM bitcode (no BC 0xC0DE magic)");
  }
  out.bitcode = std::move(*bytes);
  for (const char* f : {kUnit, "coop_unit.ll", "coop_unit.bc"}) fs::remove(work / f, ec);
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace coopd

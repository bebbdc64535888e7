#include "server/engine/bitcode.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
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
#include "server/engine/private_dir.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"
#include "server/util/subprocess.h"

namespace coopd {
namespace {

namespace fs = std::filesystem;

constexpr char kLegacyWorkspacePrefix[] = "coopd-clang-";  // $TMPDIR/coopd-clang-<pid>
constexpr char kPchHeader[] = "coop_pch.cuh";              // in pch/: includes the prelude
constexpr char kUnit[] = "coop_unit.cu";  // the name clang's messages and the IR carry
constexpr char kPchOut[] = "pch-out";     // in a worker's scratch: a PCH it built

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

// The semantic options with the placeholder replaced by the workspace's include directory. It is
// absolute, the same for every worker, so that the precompiled header one worker built (which
// records the paths of the headers it was built from) fits every other worker's compiles; the
// unit itself is named relative to the work directory, so the IR's module name carries no path.
std::vector<std::string> Resolve(const std::vector<std::string>& options,
                                 const std::string& workspace) {
  std::vector<std::string> out;
  for (const auto& o : options) {
    out.push_back(o == kDeviceIncludePlaceholder ? StrCat("-I", workspace, "/include") : o);
  }
  return out;
}

// 24 hex digits and ".pch": the only names a precompiled header has.
bool IsPchName(const std::string& name) {
  if (name.size() != 28 || name.compare(24, 4, ".pch") != 0) return false;
  return std::all_of(name.begin(), name.begin() + 24,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

struct Clang {
  const BitcodeJob& job;
  std::string work;  // this worker's scratch directory for this job: <scratch>/clang

  absl::StatusOr<ProcessResult> Run(std::vector<std::string> args) const {
    args.insert(args.begin(), job.clang);
    ProcessOptions options;
    options.cwd = work;
    return RunProcess(args, options);
  }

  // The precompiled header for the job's options: the workspace's (read only) when the daemon
  // has published it; otherwise built now into <scratch>/pch-out/ (before the unit is compiled,
  // by a clang that reads only the prelude), used by this compile and reported in *built for the
  // daemon to publish (PublishPch). Two workers may build the same one at once; the first
  // published wins. An error says why there is none (the compile then goes on without).
  absl::StatusOr<std::string> EnsurePch(std::string* built) const {
    built->clear();
    Sha256 h;
    h.UpdateField(job.identity);
    for (const auto& o : job.options) h.UpdateField(o);
    const std::string name = h.FinishHex().substr(0, 24) + ".pch";
    const fs::path published = fs::path(job.workspace) / "pch" / name;
    std::error_code ec;
    if (fs::exists(published, ec)) return published.string();
    const fs::path out = fs::path(job.scratch) / kPchOut / name;
    std::vector<std::string> args = Resolve(job.options, job.workspace);
    for (const char* a : {"-emit-llvm", "-c", "-Xclang", "-emit-pch", "-o"}) args.push_back(a);
    args.push_back(out.string());
    args.push_back((fs::path(job.workspace) / "pch" / kPchHeader).string());
    auto r = Run(args);
    if (!r.ok()) return r.status();
    if (!r->ok()) {
      fs::remove(out, ec);
      return absl::InternalError(StrCat("clang ", r->Describe(), " building it: ", r->err));
    }
    *built = name;
    return out.string();
  }
};

// Empties (creating it if needed) <scratch>/<sub>; false when it cannot.
bool FreshScratch(const std::string& scratch, const char* sub) {
  const std::string dir = StrCat(scratch, "/", sub);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return false;
  return EmptyOwnedDir(dir);
}

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
    const std::vector<EmbeddedHeader>& headers, const std::string& parent) {
  // Workspaces under the old name, of daemons that were killed (their precompiled headers are
  // tens of MB each): only this user's real directories (private_dir.h). For one release.
  for (const std::string& base : {TempBase(), std::string("/tmp")}) {
    RemoveStalePidDirs(base, {kLegacyWorkspacePrefix});
  }
  auto made = MakePrivateTempDir(parent, "clang-");
  if (!made.ok()) {
    return absl::FailedPreconditionError(
        StrCat("cannot create the clang workspace: ", made.status().message()));
  }
  const fs::path dir = *made;
  std::error_code ec;
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
  RemoveOwnedTree(path_);
}

absl::Status PublishPch(const std::string& workspace, const std::string& worker_temp,
                        const std::string& name) {
  if (!IsPchName(name)) {
    return absl::InvalidArgumentError(
        StrCat("clang workspace: a worker reported a precompiled header named \"", name,
               "\"; only 24 hex digits and .pch are allowed"));
  }
  const std::string from = StrCat(worker_temp, "/", kPchOut, "/", name);
  const std::string to = StrCat(workspace, "/pch/", name);
  struct stat st {};
  if (lstat(from.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    unlink(from.c_str());
    return absl::FailedPreconditionError(
        StrCat("clang workspace: ", from, " is not a regular file of coopd's; not published"));
  }
  // RENAME_NOREPLACE: a header another worker published first stays (and this one goes).
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    unlink(from.c_str());
    if (err == EEXIST) return absl::OkStatus();
    return absl::FailedPreconditionError(
        StrCat("clang workspace: cannot publish ", from, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<BitcodeOutput> CompileToBitcode(const BitcodeJob& job) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::is_directory(fs::path(job.workspace) / "include", ec)) {
    return absl::FailedPreconditionError(
        StrCat("clang workspace ", job.workspace, " is missing (removed while coopd runs?)"));
  }
  // The unit and every output live in the worker's own scratch, emptied before the job (nothing
  // an earlier compile left there is seen) and after it, on every path (no unit outlives its
  // job; a job that times out takes the worker, whose whole directory the daemon removes).
  if (!FreshScratch(job.scratch, "clang") || !FreshScratch(job.scratch, kPchOut)) {
    return absl::FailedPreconditionError(
        StrCat("clang: cannot prepare the worker's scratch directory ", job.scratch));
  }
  const Clang clang{job, StrCat(job.scratch, "/clang")};
  struct Wipe {
    std::string dir;
    ~Wipe() { EmptyOwnedDir(dir); }
  } wipe{clang.work};
  const fs::path work(clang.work);
  if (absl::Status s = WriteFile(work / kUnit, job.source); !s.ok()) return s;

  BitcodeOutput out;
  std::string pch;
  if (!job.pch) {
    out.pch_status = "off";
  } else {
    auto built = clang.EnsurePch(&out.pch_built);
    if (built.ok()) {
      pch = *built;
      out.pch_status = out.pch_built.empty() ? "used" : "created";
    } else {
      out.pch_status = StrCat("not created: ", built.status().message());
    }
  }
  auto step1 = [&](const std::string& with_pch) {
    std::vector<std::string> args = Resolve(job.options, job.workspace);
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
    // request: compile without it (workers cannot remove a published one: the workspace is read
    // only to them; one this compile built is not published).
    auto plain = step1("");
    if (!plain.ok()) return plain.status();
    if (plain->ok()) {
      out.pch_built.clear();
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
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace coopd

#include "server/toolchain/toolchain.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <utility>

#include "device/embedded_headers.h"
#include "server/toolchain/cuda_libs.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {
namespace fs = std::filesystem;

std::string DefaultCcclInclude() {
  const char* home = std::getenv("CUDA_HOME");
  std::string root = home != nullptr && *home != '\0' ? home : "/usr/local/cuda";
  return root + "/include/cccl";
}

std::string DefaultCudaInclude() {
  const char* home = std::getenv("CUDA_HOME");
  std::string root = home != nullptr && *home != '\0' ? home : "/usr/local/cuda";
  return root + "/include";
}

std::string Toolchain::NvrtcVersion() const {
  return StrCat(nvrtc_major, ".", nvrtc_minor);
}
std::string Toolchain::NvJitLinkVersion() const {
  return StrCat(nvjitlink_major, ".", nvjitlink_minor);
}

namespace {

absl::StatusOr<std::string> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(StrCat("cannot read ", p.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ManifestEntry {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string digest;
};

std::map<std::string, ManifestEntry> LoadManifest(const std::string& path,
                                                  const std::string& root) {
  std::map<std::string, ManifestEntry> out;
  std::ifstream in(path);
  std::string line;
  // First line names the tree it describes; a manifest for another root is ignored.
  if (!std::getline(in, line) || line != "coopd-header-manifest-v1\t" + root) return out;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string rel;
    ManifestEntry e;
    if (std::getline(f, rel, '\t') && f >> e.size >> e.mtime_ns >> e.digest) out[rel] = e;
  }
  return out;
}

void SaveManifest(const std::string& path, const std::string& root,
                  const std::map<std::string, ManifestEntry>& entries) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "coopd-header-manifest-v1\t" << root << "\n";
    for (const auto& [rel, e] : entries) {
      out << rel << "\t" << e.size << " " << e.mtime_ns << " " << e.digest << "\n";
    }
    if (!out) return;  // best effort: the next start re-hashes
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
}

// Digest of a directory tree: every regular file, in sorted relative-path order, contributes its
// path and its content digest. Symlinks are followed (NVRTC follows them too). A file whose
// size and mtime match the manifest reuses the digest recorded there.
absl::StatusOr<std::string> TreeDigest(const fs::path& root, const std::string& manifest_path,
                                       size_t* hashed, size_t* total) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator
           it(root, fs::directory_options::follow_directory_symlink, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), root, ec).string());
  }
  if (ec) {
    return absl::FailedPreconditionError(
        StrCat("cannot scan CCCL headers in ", root.string(), ": ", ec.message()));
  }
  std::sort(files.begin(), files.end());
  const std::string root_name = root.string();
  std::map<std::string, ManifestEntry> old;
  if (!manifest_path.empty()) old = LoadManifest(manifest_path, root_name);
  std::map<std::string, ManifestEntry> fresh;
  Sha256 h;
  *hashed = 0;
  *total = files.size();
  for (const auto& rel : files) {
    const fs::path p = root / rel;
    ManifestEntry e;
    e.size = fs::file_size(p, ec);
    if (ec) return absl::FailedPreconditionError(StrCat("cannot stat ", p.string()));
    e.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     fs::last_write_time(p, ec).time_since_epoch())
                     .count();
    auto it = old.find(rel);
    if (it != old.end() && it->second.size == e.size && it->second.mtime_ns == e.mtime_ns) {
      e.digest = it->second.digest;
    } else {
      auto contents = ReadFile(p);
      if (!contents.ok()) return contents.status();
      e.digest = Sha256::Hex(*contents);
      ++*hashed;
    }
    h.UpdateField(rel);
    h.UpdateField(e.digest);
    fresh[rel] = std::move(e);
  }
  if (!manifest_path.empty() && (*hashed > 0 || old.size() != fresh.size())) {
    SaveManifest(manifest_path, root_name, fresh);
  }
  return h.FinishHex();
}

}  // namespace

namespace {

// The CCCL part of `tc`: version, optional headers, digest and the header digest over it.
absl::Status ProbeCccl(const std::string& include, const std::string& manifest_path,
                       const std::string& what, Toolchain* tc) {
  tc->cccl_include = include;
  const fs::path version_header = fs::path(include) / "cuda/std/__cccl/version.h";
  auto version_text = ReadFile(version_header);
  if (!version_text.ok()) {
    return absl::FailedPreconditionError(StrCat("toolchain: CCCL headers not found: cannot read ",
                                                version_header.string(), " (", what, ")"));
  }
  const std::string marker = "#define CCCL_VERSION ";
  size_t pos = version_text->find(marker);
  if (pos == std::string::npos) {
    return absl::FailedPreconditionError(
        StrCat("toolchain: no CCCL_VERSION in ", version_header.string(), " (", what, ")"));
  }
  long v = std::strtol(version_text->c_str() + pos + marker.size(), nullptr, 10);
  tc->cccl_version = StrCat(v / 1000000, ".", (v / 1000) % 1000, ".", v % 1000);
  tc->cccl_headers_present.clear();
  for (const std::string& h : OptionalCcclHeaders()) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(include) / h, ec)) tc->cccl_headers_present.push_back(h);
  }
  size_t hashed = 0, total = 0;
  auto cccl_digest = TreeDigest(include, manifest_path, &hashed, &total);
  if (!cccl_digest.ok()) return cccl_digest.status();
  tc->cccl_digest = *cccl_digest;
  tc->headers_hashed += hashed;
  tc->headers_total += total;
  Sha256 all;
  all.UpdateField(tc->cccl_digest);
  all.UpdateField(tc->cuda_digest);
  all.UpdateField(tc->device_digest);
  tc->header_digest = all.FinishHex();
  return absl::OkStatus();
}

bool SameDirectory(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

absl::Status CheckCcclName(const CcclSource& source, const std::vector<Toolchain>& before) {
  const std::string& n = source.name;
  const bool good = !n.empty() && n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
  if (!good) {
    return absl::InvalidArgumentError(StrCat(
        source.origin, ": a CCCL's name must be 1..64 of A-Z a-z 0-9 . _ -, got \"", n, "\""));
  }
  if (n == "toolkit" || n == "default") {
    return absl::InvalidArgumentError(
        StrCat(source.origin, ": the CCCL name \"", n,
               "\" is coopd's own (\"toolkit\": the CUDA toolkit's CCCL; \"default\": "
               "--cccl-include's); choose another"));
  }
  for (const Toolchain& t : before) {
    if (t.cccl_name == n) {
      return absl::InvalidArgumentError(StrCat(source.origin, ": the CCCL name \"", n,
                                               "\" is already taken (", t.cccl_origin, ", ",
                                               t.cccl_include, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> FindCcclInclude(const std::string& path, const std::string& what) {
  const char* const layouts[] = {"",
                                 "include",
                                 "include/cccl",
                                 "nvidia/cu13/include/cccl",
                                 "nvidia/cu12/include/cccl",
                                 "cuda/cccl/headers/include"};
  std::vector<std::string> looked;
  for (const char* layout : layouts) {
    const fs::path root = *layout == '\0' ? fs::path(path) : fs::path(path) / layout;
    std::error_code ec;
    if (fs::is_regular_file(root / "cuda/std/__cccl/version.h", ec)) {
      // Absolute: the workers compile in directories of their own.
      return fs::absolute(root, ec).lexically_normal().string();
    }
    looked.push_back(root.string());
  }
  return absl::FailedPreconditionError(
      StrCat(what, ": no CCCL headers (cuda/std/__cccl/version.h) in ", StrJoin(looked, ", "),
             ". Give an include root (holding cub/, thrust/, cuda/), or a site-packages directory "
             "where nvidia-cuda-cccl or cuda-cccl is installed"));
}

absl::StatusOr<std::vector<Toolchain>> ProbeToolchains(const ToolchainOptions& options,
                                                       std::string* note) {
  Toolchain tc;
  tc.cuda_include = options.cuda_include.empty() ? DefaultCudaInclude() : options.cuda_include;
  // clang's probe runs three clang processes (most of a start with the header manifest): on a
  // thread of its own, beside the rest of the probe.
  std::future<ClangToolchain> clang = std::async(std::launch::async, ProbeClang, options.clang,
                                                 fs::path(tc.cuda_include).parent_path().string());

  // The daemon's only use of NVRTC and nvJitLink: they are unloaded again (cuda_libs.h).
  auto cuda = ProbeCudaLibraries();
  if (!cuda.ok()) return cuda.status();
  tc.nvrtc_major = cuda->nvrtc_major;
  tc.nvrtc_minor = cuda->nvrtc_minor;
  tc.nvjitlink_major = cuda->nvjitlink_major;
  tc.nvjitlink_minor = cuda->nvjitlink_minor;
  tc.supported_archs = std::move(cuda->supported_archs);
  tc.nvrtc_library = std::move(cuda->nvrtc_path);

  size_t cuda_hashed = 0, cuda_total = 0;
  auto cuda_digest = TreeDigest(
      tc.cuda_include, options.manifest_path.empty() ? "" : options.manifest_path + ".cuda",
      &cuda_hashed, &cuda_total);
  if (!cuda_digest.ok()) return cuda_digest.status();
  tc.cuda_digest = *cuda_digest;
  tc.headers_hashed += cuda_hashed;
  tc.headers_total += cuda_total;

  Sha256 dev;
  for (const auto& f : coop_device::EmbeddedHeaders()) {
    tc.device_headers.push_back({std::string(f.name), std::string(f.contents)});
    dev.UpdateField(f.name);
    dev.UpdateField(f.contents);
  }
  tc.device_digest = dev.FinishHex();
  tc.clang = clang.get();

  std::vector<Toolchain> out;
  const std::string toolkit = DefaultCcclInclude();
  const bool default_is_toolkit =
      options.cccl_include.empty() || SameDirectory(options.cccl_include, toolkit);
  {
    Toolchain first = tc;
    first.cccl_name = default_is_toolkit ? "toolkit" : "default";
    first.cccl_origin = default_is_toolkit ? "CUDA toolkit" : "--cccl-include";
    std::error_code ec;
    const std::string include =
        options.cccl_include.empty()
            ? toolkit
            : fs::absolute(options.cccl_include, ec).lexically_normal().string();
    if (absl::Status s =
            ProbeCccl(include, options.manifest_path, "set --cccl-include or CUDA_HOME", &first);
        !s.ok()) {
      return s;
    }
    out.push_back(std::move(first));
  }
  if (!default_is_toolkit) {
    Toolchain kit = tc;
    kit.cccl_name = "toolkit";
    kit.cccl_origin = "CUDA toolkit";
    absl::Status s = ProbeCccl(
        toolkit, options.manifest_path.empty() ? "" : options.manifest_path + ".cccl-toolkit",
        "the CUDA toolkit's CCCL", &kit);
    if (s.ok()) {
      out.push_back(std::move(kit));
    } else if (note != nullptr) {
      *note = StrCat("the CUDA toolkit's CCCL is not served: ", s.message());
    }
  }
  for (const CcclSource& source : options.extra_cccls) {
    if (absl::Status s = CheckCcclName(source, out); !s.ok()) return s;
    const std::string what = StrCat(source.origin, " ", source.name, "=", source.path);
    auto include = FindCcclInclude(source.path, what);
    if (!include.ok()) return include.status();
    Toolchain extra = tc;
    extra.cccl_name = source.name;
    extra.cccl_origin = source.origin;
    if (absl::Status s = ProbeCccl(
            *include,
            options.manifest_path.empty() ? "" : options.manifest_path + ".cccl-" + source.name,
            what, &extra);
        !s.ok()) {
      return s;
    }
    out.push_back(std::move(extra));
  }
  return out;
}

absl::StatusOr<Toolchain> ProbeToolchain(const ToolchainOptions& options) {
  ToolchainOptions only = options;
  only.extra_cccls.clear();
  auto all = ProbeToolchains(only);
  if (!all.ok()) return all.status();
  return std::move(all->front());
}

}  // namespace coopd

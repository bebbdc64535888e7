#include "server/toolchain.h"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "device/embedded_headers.h"
#include "server/sha256.h"
#include "server/strings.h"

namespace coopd {
namespace fs = std::filesystem;

std::string DefaultCcclInclude() {
  const char* home = std::getenv("CUDA_HOME");
  std::string root = home != nullptr && *home != '\0' ? home : "/usr/local/cuda";
  return root + "/include/cccl";
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

// Digest of a directory tree: every regular file, in sorted relative-path order, contributes its
// path and contents. Symlinks are followed (NVRTC follows them too).
absl::StatusOr<std::string> TreeDigest(const fs::path& root) {
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
  Sha256 h;
  for (const auto& rel : files) {
    auto contents = ReadFile(root / rel);
    if (!contents.ok()) return contents.status();
    h.UpdateField(rel);
    h.UpdateField(*contents);
  }
  return h.FinishHex();
}

}  // namespace

absl::StatusOr<Toolchain> ProbeToolchain(const ToolchainOptions& options) {
  Toolchain tc;
  tc.cccl_include = options.cccl_include.empty() ? DefaultCcclInclude() : options.cccl_include;

  if (nvrtcVersion(&tc.nvrtc_major, &tc.nvrtc_minor) != NVRTC_SUCCESS) {
    return absl::FailedPreconditionError("toolchain: nvrtcVersion failed (is NVRTC installed?)");
  }
  unsigned int jl_major = 0, jl_minor = 0;
  if (nvJitLinkVersion(&jl_major, &jl_minor) != NVJITLINK_SUCCESS) {
    return absl::FailedPreconditionError("toolchain: nvJitLinkVersion failed");
  }
  tc.nvjitlink_major = static_cast<int>(jl_major);
  tc.nvjitlink_minor = static_cast<int>(jl_minor);

  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) {
    return absl::FailedPreconditionError("toolchain: nvrtcGetNumSupportedArchs failed");
  }
  tc.supported_archs.resize(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(tc.supported_archs.data()) != NVRTC_SUCCESS) {
    return absl::FailedPreconditionError("toolchain: nvrtcGetSupportedArchs failed");
  }

  const fs::path version_header = fs::path(tc.cccl_include) / "cuda/std/__cccl/version.h";
  auto version_text = ReadFile(version_header);
  if (!version_text.ok()) {
    return absl::FailedPreconditionError(StrCat("toolchain: CCCL headers not found: cannot read ",
                                                version_header.string(),
                                                " (set --cccl-include or CUDA_HOME)"));
  }
  const std::string marker = "#define CCCL_VERSION ";
  size_t pos = version_text->find(marker);
  if (pos == std::string::npos) {
    return absl::FailedPreconditionError(
        StrCat("toolchain: no CCCL_VERSION in ", version_header.string()));
  }
  long v = std::strtol(version_text->c_str() + pos + marker.size(), nullptr, 10);
  tc.cccl_version = StrCat(v / 1000000, ".", (v / 1000) % 1000, ".", v % 1000);

  auto cccl_digest = TreeDigest(tc.cccl_include);
  if (!cccl_digest.ok()) return cccl_digest.status();
  tc.cccl_digest = *cccl_digest;

  Sha256 dev;
  for (const auto& f : coop_device::EmbeddedHeaders()) {
    tc.device_headers.push_back({std::string(f.name), std::string(f.contents)});
    dev.UpdateField(f.name);
    dev.UpdateField(f.contents);
  }
  tc.device_digest = dev.FinishHex();
  Sha256 all;
  all.UpdateField(tc.cccl_digest);
  all.UpdateField(tc.device_digest);
  tc.header_digest = all.FinishHex();
  return tc;
}

}  // namespace coopd

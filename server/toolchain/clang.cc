// The optional clang backend's half of the toolchain probe (toolchain.h).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "server/toolchain/toolchain.h"
#include "server/util/strings.h"
#include "server/util/subprocess.h"

namespace coopd {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::seconds kProbeTimeout{30};

// `name` itself when it holds a '/', else the first executable of that name on PATH; "" if none.
std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    std::error_code ec;
    const fs::path p = fs::absolute(name, ec);
    return !ec && access(p.c_str(), X_OK) == 0 ? p.string() : "";
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    if (access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p)) return p.string();
  }
  return "";
}

}  // namespace

std::string ClangToolchain::Identity() const {
  return StrCat(version, " at ", path);
}

std::string ClangToolchain::UnavailableMessage() const {
  return StrCat("bitcode needs ", kClangPackage, ": apt-get install ", kClangPackage,
                " (or --clang PATH); ", error);
}

ClangToolchain ProbeClang(const std::string& requested, const std::string& cuda_path) {
  ClangToolchain c;
  c.requested = requested;
  if (requested.empty()) {
    c.error = "no clang is configured";
    return c;
  }
  c.path = FindProgram(requested);
  if (c.path.empty()) {
    c.error = requested.find('/') != std::string::npos
                  ? StrCat(requested, " does not exist or is not executable")
                  : StrCat(requested, " is not on PATH");
    return c;
  }
  ProcessOptions options;
  options.timeout = kProbeTimeout;
  auto version = RunProcess({c.path, "--version"}, options);
  if (!version.ok() || !version->ok()) {
    c.error = StrCat(c.path, " --version failed: ",
                     version.ok() ? StrCat(version->Describe(), ": ", version->err)
                                  : std::string(version.status().message()));
    c.path.clear();
    return c;
  }
  c.version = version->out.substr(0, version->out.find('\n'));
  const size_t at = c.version.find("version ");
  if (c.version.find("clang") == std::string::npos || at == std::string::npos) {
    c.error = StrCat(c.path, " does not say it is clang: \"", c.version, "\"");
    c.path.clear();
    return c;
  }
  c.major = std::atoi(c.version.c_str() + at + 8);

  // The processors of its NVPTX backend, one per line after a header ("\tsm_90a").
  auto cpus =
      RunProcess({c.path, "--target=nvptx64-nvidia-cuda", "--print-supported-cpus"}, options);
  if (cpus.ok() && cpus->ok()) {
    std::istringstream lines(cpus->out + "\n" + cpus->err);
    for (std::string line; std::getline(lines, line);) {
      const size_t start = line.find_first_not_of(" \t");
      if (start == std::string::npos || line.compare(start, 3, "sm_") != 0) continue;
      const size_t end = line.find_first_of(" \t\r", start);
      c.gpu_archs.push_back(line.substr(start, end == std::string::npos ? end : end - start));
    }
  }
  // "CUDA version is newer than the latest partially supported version 12.9".
  auto cuda = RunProcess({c.path, "-x", "cuda", "--cuda-device-only", "--cuda-path=" + cuda_path,
                          "-nocudalib", "-E", "/dev/null", "-o", "/dev/null"},
                         options);
  if (cuda.ok()) {
    constexpr std::string_view kNewer = "latest partially supported version ";
    const size_t at = cuda->err.find(kNewer);
    if (at != std::string::npos) {
      const size_t start = at + kNewer.size();
      const size_t end = cuda->err.find_first_not_of("0123456789.", start);
      c.newest_cuda_known = cuda->err.substr(start, end - start);
    }
  }
  if (c.gpu_archs.empty()) {
    c.error = StrCat(c.path, " (", c.version,
                     ") lists no NVPTX processors (--print-supported-cpus); it cannot compile for "
                     "NVIDIA GPUs");
    c.path.clear();
  }
  return c;
}

}  // namespace coopd

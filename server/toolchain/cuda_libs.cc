#include "server/toolchain/cuda_libs.h"

#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <utility>

#include "server/util/strings.h"

namespace coopd {
namespace {

// A dlopen handle; closed on destruction unless released.
class Library {
 public:
  Library() = default;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }

  // The soname through the loader's search path, then in `fallback_dir`.
  absl::Status Open(const std::string& soname, const std::string& fallback_dir) {
    handle_ = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) return absl::OkStatus();
    const std::string first = dlerror();
    const std::string fallback = StrCat(fallback_dir, "/", soname);
    handle_ = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) return absl::OkStatus();
    return absl::FailedPreconditionError(StrCat(
        "toolchain: cannot load ", soname, " (is the CUDA toolkit installed? it was looked ",
        "for on LD_LIBRARY_PATH, in the loader's cache and in ", fallback_dir, "): ", first));
  }

  // The address of `name`, or nullptr.
  void* Symbol(const char* name) const { return dlsym(handle_, name); }

  std::string Path() const {
    struct link_map* map = nullptr;
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return "";
    return map->l_name;
  }

  void Release() { handle_ = nullptr; }

 private:
  void* handle_ = nullptr;
};

absl::Status Resolve(const Library& lib, const std::string& soname, const char* name, void** out) {
  *out = lib.Symbol(name);
  if (*out != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      StrCat("toolchain: ", lib.Path(), " (", soname, ") has no function ", name,
             ": coopd needs the CUDA toolkit it was built against or a newer one of the same "
             "major version"));
}

// Opens both libraries and fills `api`; the handles stay open while `nvrtc` and `jitlink` live.
absl::Status Open(const CudaLibraryNames& names, Library* nvrtc, Library* jitlink, CudaApi* api) {
  if (absl::Status s = nvrtc->Open(names.nvrtc, names.fallback_dir); !s.ok()) return s;
  if (absl::Status s = jitlink->Open(names.nvjitlink, names.fallback_dir); !s.ok()) return s;
  void* p = nullptr;
#define COOPD_CUDA_RESOLVE(lib, soname, name)                               \
  if (absl::Status s = Resolve(*lib, soname, #name, &p); !s.ok()) return s; \
  api->name = reinterpret_cast<decltype(api->name)>(p);
#define COOPD_NVRTC_RESOLVE(name) COOPD_CUDA_RESOLVE(nvrtc, names.nvrtc, name)
#define COOPD_NVJITLINK_RESOLVE(name) COOPD_CUDA_RESOLVE(jitlink, names.nvjitlink, name)
  COOPD_NVRTC_FUNCTIONS(COOPD_NVRTC_RESOLVE)
  COOPD_NVJITLINK_FUNCTIONS(COOPD_NVJITLINK_RESOLVE)
#undef COOPD_NVJITLINK_RESOLVE
#undef COOPD_NVRTC_RESOLVE
#undef COOPD_CUDA_RESOLVE
  api->nvrtc_path = nvrtc->Path();
  api->nvjitlink_path = jitlink->Path();
  return absl::OkStatus();
}

}  // namespace

CudaLibraryNames BuiltCudaLibraries() {
  return {COOPD_NVRTC_SONAME, COOPD_NVJITLINK_SONAME, COOPD_CUDA_LIBRARY_DIR};
}

absl::StatusOr<const CudaApi*> LoadCuda() {
  static std::once_flag once;
  static CudaApi api;
  static absl::Status status;
  std::call_once(once, [] {
    Library nvrtc, jitlink;
    status = Open(BuiltCudaLibraries(), &nvrtc, &jitlink, &api);
    if (status.ok()) {  // kept for the life of the process
      nvrtc.Release();
      jitlink.Release();
    }
  });
  if (!status.ok()) return status;
  return &api;
}

absl::StatusOr<CudaProbe> ProbeCudaLibraries(const CudaLibraryNames& names) {
  Library nvrtc, jitlink;  // closed on return
  CudaApi api;
  if (absl::Status s = Open(names, &nvrtc, &jitlink, &api); !s.ok()) return s;
  CudaProbe probe;
  probe.nvrtc_path = api.nvrtc_path;
  if (api.nvrtcVersion(&probe.nvrtc_major, &probe.nvrtc_minor) != NVRTC_SUCCESS) {
    return absl::FailedPreconditionError(
        StrCat("toolchain: nvrtcVersion failed (", api.nvrtc_path, ")"));
  }
  unsigned int jl_major = 0, jl_minor = 0;
  if (api.nvJitLinkVersion(&jl_major, &jl_minor) != NVJITLINK_SUCCESS) {
    return absl::FailedPreconditionError(
        StrCat("toolchain: nvJitLinkVersion failed (", api.nvjitlink_path, ")"));
  }
  probe.nvjitlink_major = static_cast<int>(jl_major);
  probe.nvjitlink_minor = static_cast<int>(jl_minor);
  int n = 0;
  if (api.nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) {
    return absl::FailedPreconditionError("toolchain: nvrtcGetNumSupportedArchs failed");
  }
  probe.supported_archs.resize(static_cast<size_t>(n));
  if (api.nvrtcGetSupportedArchs(probe.supported_archs.data()) != NVRTC_SUCCESS) {
    return absl::FailedPreconditionError("toolchain: nvrtcGetSupportedArchs failed");
  }
  return probe;
}

}  // namespace coopd

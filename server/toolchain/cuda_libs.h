// NVRTC and nvJitLink, opened with dlopen instead of linked.
//
// Mapping the two libraries costs a process about 55 MB of RSS (their loading touches that much
// of 200 MB of code and data), and only compile workers compile or link: the daemon needs their
// versions and NVRTC's architecture list, once, at start-up. So coopd does not link them.
// ProbeCudaLibraries() opens both, reads what the toolchain probe needs and closes them again
// (the daemon); LoadCuda() opens them on first use and keeps them for the life of the process
// (a worker's first job, or a test that compiles in process).
//
// Each library is looked up by the soname coopd was built against (libnvrtc.so.13,
// libnvJitLink.so.13): LD_LIBRARY_PATH, the loader's cache and default directories first, then
// the CUDA toolkit's library directory found at build time (where the linked coopd's RUNPATH
// pointed).
#pragma once

#include <nvJitLink.h>
#include <nvrtc.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coopd {

// Every NVRTC and nvJitLink function coopd calls, named as in nvrtc.h and nvJitLink.h. (For
// nvJitLink, whose header routes each call to a versioned symbol such as
// __nvJitLinkCreate_13_0, the library's unversioned export of the same function is used.)
// clang-format off
#define COOPD_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)                \
  X(nvrtcGetNumSupportedArchs)   \
  X(nvrtcGetSupportedArchs)      \
  X(nvrtcGetErrorString)         \
  X(nvrtcCreateProgram)          \
  X(nvrtcDestroyProgram)         \
  X(nvrtcCompileProgram)         \
  X(nvrtcGetProgramLogSize)      \
  X(nvrtcGetProgramLog)          \
  X(nvrtcGetLTOIRSize)           \
  X(nvrtcGetLTOIR)               \
  X(nvrtcSetPCHHeapSize)         \
  X(nvrtcGetPCHCreateStatus)
#define COOPD_NVJITLINK_FUNCTIONS(X) \
  X(nvJitLinkVersion)                \
  X(nvJitLinkCreate)                 \
  X(nvJitLinkDestroy)                \
  X(nvJitLinkAddData)                \
  X(nvJitLinkComplete)               \
  X(nvJitLinkGetLinkedPtxSize)       \
  X(nvJitLinkGetLinkedPtx)           \
  X(nvJitLinkGetLinkedCubinSize)     \
  X(nvJitLinkGetLinkedCubin)         \
  X(nvJitLinkGetErrorLogSize)        \
  X(nvJitLinkGetErrorLog)            \
  X(nvJitLinkGetInfoLogSize)         \
  X(nvJitLinkGetInfoLog)
// clang-format on

// The functions of both libraries, every pointer set (a missing one fails the load).
struct CudaApi {
#define COOPD_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  COOPD_NVRTC_FUNCTIONS(COOPD_CUDA_MEMBER)
  COOPD_NVJITLINK_FUNCTIONS(COOPD_CUDA_MEMBER)
#undef COOPD_CUDA_MEMBER
  std::string nvrtc_path;  // the file each library was loaded from
  std::string nvjitlink_path;
};

// Where the libraries are looked for: each soname on the loader's path, then in `fallback_dir`.
struct CudaLibraryNames {
  std::string nvrtc;         // "libnvrtc.so.13"
  std::string nvjitlink;     // "libnvJitLink.so.13"
  std::string fallback_dir;  // the toolkit's library directory of the build
};
// The sonames and directory of the toolkit coopd was built against.
CudaLibraryNames BuiltCudaLibraries();

// Opens both libraries the first time it is called (thread safe) and keeps them open; later
// calls return the same result. FAILED_PRECONDITION naming the library, where it was looked for
// and the loader's message when one cannot be opened or lacks a function.
absl::StatusOr<const CudaApi*> LoadCuda();

// What the daemon's toolchain probe needs from the libraries.
struct CudaProbe {
  int nvrtc_major = 0, nvrtc_minor = 0;
  int nvjitlink_major = 0, nvjitlink_minor = 0;
  std::vector<int> supported_archs;  // NVRTC's, e.g. 75, 80, ..., 120
  std::string nvrtc_path;            // the file NVRTC was loaded from
};

// Opens both libraries, asks for their versions and NVRTC's architectures, and closes them
// again (a process that also called LoadCuda() keeps them). FAILED_PRECONDITION as LoadCuda,
// or naming the call that failed.
absl::StatusOr<CudaProbe> ProbeCudaLibraries(const CudaLibraryNames& names = BuiltCudaLibraries());

}  // namespace coopd

// cubins: builds the radix-gap experiment's NVRTC cubins for sm_90 (device/radix_gap/run.py).
//   cubins nvrtc-native SORT_KERNEL_CUH OUT.cubin
//       CUB compiled into the kernel by NVRTC, whole program (no coopd, no LTO): what any NVRTC
//       user (cuda.coop, a JIT) gets.
//   cubins linked SORT_KERNEL_CUH WRAPPER.ltoir SYMBOL OUT.cubin
//       the kernel compiled by NVRTC to LTO-IR (-dlto -rdc=true) and linked with coopd's
//       artifact by nvJitLink -lto, as the GPU suite and the frontends do.
// CCCL comes from $CCCL_INCLUDE (default /usr/local/cuda/include/cccl).
#include <nvJitLink.h>
#include <nvrtc.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  if (!in) {
    std::cerr << "cubins: cannot read " << path << "\n";
    std::exit(1);
  }
  return s.str();
}

void Write(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
  if (!out) {
    std::cerr << "cubins: cannot write " << path << "\n";
    std::exit(1);
  }
}

std::string Compile(const std::string& source, std::vector<std::string> options, bool ltoir) {
  nvrtcProgram prog = nullptr;
  nvrtcCreateProgram(&prog, source.c_str(), "sort.cu", 0, nullptr, nullptr);
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  const nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  nvrtcGetProgramLog(prog, log.data());
  if (rc != NVRTC_SUCCESS) {
    std::cerr << "cubins: NVRTC failed: " << nvrtcGetErrorString(rc) << "\n" << log;
    std::exit(1);
  }
  std::string out;
  if (ltoir) {
    nvrtcGetLTOIRSize(prog, &n);
    out.resize(n);
    nvrtcGetLTOIR(prog, out.data());
  } else {
    nvrtcGetCUBINSize(prog, &n);
    out.resize(n);
    nvrtcGetCUBIN(prog, out.data());
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "nvrtc-native" && argc == 4) || (mode == "linked" && argc == 6))) {
    std::cerr << "usage: cubins nvrtc-native SORT_KERNEL_CUH OUT.cubin\n"
                 "       cubins linked SORT_KERNEL_CUH WRAPPER.ltoir SYMBOL OUT.cubin\n";
    return 2;
  }
  const char* cccl = std::getenv("CCCL_INCLUDE");
  std::vector<std::string> options = {
      "-arch=sm_90", "-std=c++17",
      std::string("-I") + (cccl != nullptr ? cccl : "/usr/local/cuda/include/cccl"),
      "-I/usr/local/cuda/include"};
  std::string source = Read(argv[2]);
  if (mode == "nvrtc-native") {
    Write(argv[3], Compile(source, options, /*ltoir=*/false));
    return 0;
  }
  source = std::string("#define COOP_LINKED 1\n#define COOP_SORT_SYM ") + argv[4] + "\n" + source;
  options.push_back("-dlto");
  options.push_back("-rdc=true");
  const std::string kernel = Compile(source, options, /*ltoir=*/true);
  const std::string wrapper = Read(argv[3]);
  const char* link_opts[] = {"-lto", "-arch=sm_90"};
  nvJitLinkHandle h = nullptr;
  nvJitLinkCreate(&h, 2, link_opts);
  nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, kernel.data(), kernel.size(), "kernel");
  nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, wrapper.data(), wrapper.size(), "coopd");
  if (nvJitLinkComplete(h) != NVJITLINK_SUCCESS) {
    size_t n = 0;
    nvJitLinkGetErrorLogSize(h, &n);
    std::string log(n, '\0');
    nvJitLinkGetErrorLog(h, log.data());
    std::cerr << "cubins: nvJitLink failed:\n" << log;
    return 1;
  }
  size_t n = 0;
  nvJitLinkGetLinkedCubinSize(h, &n);
  std::string cubin(n, '\0');
  nvJitLinkGetLinkedCubin(h, cubin.data());
  nvJitLinkDestroy(&h);
  Write(argv[5], cubin);
  return 0;
}

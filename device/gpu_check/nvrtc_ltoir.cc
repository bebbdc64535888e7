// nvrtc_ltoir: compiles one CUDA C++ file to LTO-IR with NVRTC (-dlto -rdc=true), as a user
// would before handing it to coopd with --op-ltoir.
// usage: nvrtc_ltoir SRC.cu OUT.ltoir [ARCH (default sm_90)]
#include <nvrtc.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: nvrtc_ltoir SRC.cu OUT.ltoir [ARCH]\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream src;
  src << in.rdbuf();
  if (!in) {
    std::cerr << "nvrtc_ltoir: cannot read " << argv[1] << "\n";
    return 1;
  }
  const std::string arch = std::string("-arch=") + (argc > 3 ? argv[3] : "sm_90");
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src.str().c_str(), argv[1], 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    std::cerr << "nvrtc_ltoir: nvrtcCreateProgram failed\n";
    return 1;
  }
  const char* opts[] = {"-dlto", "-rdc=true", arch.c_str(), "-std=c++17"};
  const nvrtcResult r = nvrtcCompileProgram(prog, 4, opts);
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  nvrtcGetProgramLog(prog, log.data());
  if (r != NVRTC_SUCCESS) {
    std::cerr << "nvrtc_ltoir: " << nvrtcGetErrorString(r) << "\n" << log;
    return 1;
  }
  if (nvrtcGetLTOIRSize(prog, &n) != NVRTC_SUCCESS) return 1;
  std::vector<char> ltoir(n);
  if (nvrtcGetLTOIR(prog, ltoir.data()) != NVRTC_SUCCESS) return 1;
  nvrtcDestroyProgram(&prog);
  std::ofstream(argv[2], std::ios::binary).write(ltoir.data(), static_cast<std::streamsize>(n));
  return 0;
}

// nvrtc_oneshot: the baseline coopd is measured against. Compiles one rendered translation unit
// to LTO-IR the way a frontend without coopd would: a fresh process, NVRTC loaded from scratch,
// no precompiled header. Prints the in-process compile time in milliseconds.
//
// usage: nvrtc_oneshot SOURCE_FILE ARCH [--minimal]
//
// --minimal swaps coopd's shared prelude (every CUB block and warp header, the PCH prefix) for
// only the headers this slice's families need, as a hand-written frontend would include.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "device/embedded_headers.h"
#include "server/engine/compiler.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: nvrtc_oneshot SOURCE_FILE ARCH [--minimal]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string source = buffer.str();
  if (argc == 4 && std::string(argv[3]) == "--minimal") {
    const std::string prelude = "#include <coop/device/prelude.cuh>\n";
    if (source.rfind(prelude, 0) != 0) {
      std::fprintf(stderr, "nvrtc_oneshot: source does not start with the prelude\n");
      return 2;
    }
    source =
        "#include <cuda/functional>\n#include <cuda/std/functional>\n"
        "#include <cub/block/block_reduce.cuh>\n#include <cub/block/block_scan.cuh>\n"
        "#include <cub/warp/warp_reduce.cuh>\n#include <coop/device/reduce.cuh>\n"
        "#include <coop/device/scan.cuh>\n" +
        source.substr(prelude.size());
  }
  coopd::Toolchain tc;
  tc.cccl_include = coopd::DefaultCcclInclude();
  std::vector<coopd::EmbeddedHeader> headers;
  for (const auto& f : coop_device::EmbeddedHeaders()) {
    headers.push_back({std::string(f.name), std::string(f.contents)});
  }
  coopd::CompileSettings settings;
  settings.pch = false;
  auto out = coopd::CompileToLtoIr(headers, source, coopd::SemanticOptions(tc, argv[2]), settings);
  if (!out.ok()) {
    std::fprintf(stderr, "nvrtc_oneshot: %s\n", std::string(out.status().message()).c_str());
    return 1;
  }
  std::printf("%.1f %zu\n", out->compile_ms, out->ltoir.size());
  return 0;
}

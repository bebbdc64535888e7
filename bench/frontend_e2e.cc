// frontend_e2e: what a C++ JIT frontend does in a fresh process to get a cubin ready to load that
// calls one CUB primitive. coopd_bench (section G) starts it once per sample and times the whole
// process; no GPU is needed (linking to a cubin runs on the host).
//
//   frontend_e2e coopd SOCKET OUT          the primitive from coopd (a cache hit), the frontend's
//                                          kernel compiled by NVRTC, both linked by nvJitLink here
//   frontend_e2e coopd-link SOCKET OUT     the same, but the link done by coopd's Link RPC
//   frontend_e2e nvrtc SOURCE SYMBOL TEMP_BYTES OUT
//                                          no coopd: the wrapper SOURCE (the unit coopd renders
//                                          for the same spec) compiled by NVRTC in this process
//                                          (no PCH), then the kernel, then nvJitLink
//
// Every mode writes the cubin to OUT and prints one line: "cubin BYTES artifact_ms kernel_ms
// link_ms". Exit status 1 on any failure (the message names the step), 2 for a usage error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "bench/frontend_spec.h"
#include "coop/client.h"
#include "device/embedded_headers.h"
#include "server/engine/compiler.h"

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

[[noreturn]] void Die(const std::string& what, int code = 1) {
  std::fprintf(stderr, "frontend_e2e: %s\n", what.c_str());
  std::exit(code);
}

// The frontend's own kernel: one block-wide sum per block through the primitive's entry, the
// temp storage reserved by the kernel. No includes, as a generated kernel would be.
std::string KernelSource(const std::string& symbol, uint64_t temp_bytes) {
  std::ostringstream s;
  s << "extern \"C\" __device__ float " << symbol << "(void* temp_storage, float input);\n"
    << "extern \"C\" __global__ void block_sums(const float* in, float* out) {\n"
    << "  __shared__ alignas(16) unsigned char temp[" << (temp_bytes ? temp_bytes : 1) << "];\n"
    << "  float sum = " << symbol << "(temp, in[blockIdx.x * blockDim.x + threadIdx.x]);\n"
    << "  if (threadIdx.x == 0) out[blockIdx.x] = sum;\n"
    << "}\n";
  return s.str();
}

std::string CompileUnit(const std::vector<coopd::EmbeddedHeader>& headers,
                        const std::string& source, const char* what) {
  coopd::Toolchain tc;
  tc.cccl_include = coopd::DefaultCcclInclude();
  coopd::CompileSettings settings;
  settings.pch = false;  // a frontend process compiles each unit once
  auto out = coopd::CompileToLtoIr(
      headers, source, coopd::SemanticOptions(tc, coopd_bench::kFrontendArch), settings);
  if (!out.ok()) Die(std::string(what) + ": " + std::string(out.status().message()));
  return std::move(out->ltoir);
}

std::string Link(const std::string& kernel, const std::string& primitive) {
  auto cubin = coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "kernel", kernel},
                                 {coopd::LinkInput::kLtoIr, "primitive", primitive}},
                                coopd_bench::kFrontendArch, {"-optimize-unused-variables"});
  if (!cubin.ok()) Die("nvJitLink: " + std::string(cubin.status().message()));
  return std::move(*cubin);
}

coop::Client ClientFor(const std::string& socket) {
  coop::ClientOptions o;
  o.socket_path = socket;
  o.autostart = false;
  return coop::Client(o);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool coopd = (mode == "coopd" || mode == "coopd-link") && argc == 4;
  if (!coopd && !(mode == "nvrtc" && argc == 6)) {
    Die("usage: frontend_e2e coopd|coopd-link SOCKET OUT | frontend_e2e nvrtc SOURCE SYMBOL "
        "TEMP_BYTES "
        "OUT",
        2);
  }
  const std::string out_path = argv[argc - 1];
  std::string cubin;
  double artifact_ms = 0, kernel_ms = 0, link_ms = 0;
  auto t0 = Clock::now();
  if (coopd) {
    coop::Client client = ClientFor(argv[2]);
    auto a = client.Specialize(coopd_bench::FrontendSpec());
    if (!a) Die("specialize: " + a.error().message);
    if (a->entries.empty()) Die("specialize: the artifact has no entries");
    artifact_ms = MsSince(t0);
    t0 = Clock::now();
    const std::string kernel =
        CompileUnit({}, KernelSource(a->entries[0].symbol, a->temp_storage_bytes), "kernel");
    kernel_ms = MsSince(t0);
    t0 = Clock::now();
    if (mode == "coopd") {
      cubin = Link(kernel, a->ltoir);
    } else {
      coop::LinkRequest req;
      req.arch = coopd_bench::kFrontendArch;
      req.modules.push_back({coop::LinkInputKind::kLtoIr, "kernel", kernel});
      req.artifact_keys.push_back(a->key);
      auto linked = client.Link(req);
      if (!linked) Die("link: " + linked.error().message);
      cubin = std::move(linked->cubin);
    }
    link_ms = MsSince(t0);
  } else {
    std::ifstream in(argv[2]);
    if (!in) Die(std::string("cannot read ") + argv[2]);
    std::stringstream source;
    source << in.rdbuf();
    std::vector<coopd::EmbeddedHeader> headers;
    for (const auto& f : coop_device::EmbeddedHeaders()) {
      headers.push_back({std::string(f.name), std::string(f.contents)});
    }
    const std::string primitive = CompileUnit(headers, source.str(), "primitive");
    artifact_ms = MsSince(t0);
    t0 = Clock::now();
    // A hand-written frontend knows the temp storage size (sizeof in its own unit); the bench
    // passes the size coopd reported for the same spec.
    const std::string kernel =
        CompileUnit({}, KernelSource(argv[3], std::strtoull(argv[4], nullptr, 10)), "kernel");
    kernel_ms = MsSince(t0);
    t0 = Clock::now();
    cubin = Link(kernel, primitive);
    link_ms = MsSince(t0);
  }
  if (cubin.empty()) Die("the linker returned an empty cubin");
  std::ofstream out(out_path, std::ios::binary);
  out << cubin;
  if (!out.flush()) Die("cannot write " + out_path);
  std::printf("cubin %zu %.1f %.1f %.1f\n", cubin.size(), artifact_ms, kernel_ms, link_ms);
  return 0;
}

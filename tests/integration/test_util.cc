#include "test_util.h"

#include <gtest/gtest.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <signal.h>

namespace coopd_test {

TestDaemon::TestDaemon(std::vector<std::string> args)
    : TestDaemon(std::make_unique<TempDir>(), std::move(args)) {}

TestDaemon::TestDaemon(std::unique_ptr<TempDir> dir, std::vector<std::string> args)
    : TestDaemon(dir->path(), std::move(args)) {
  owned_dir = std::move(dir);
}

TestDaemon::TestDaemon(const std::string& dir, std::vector<std::string> args)
    : process(dir + "/coopd.sock", dir + "/cache", std::move(args)) {
  std::string error;
  started = process.Start(&error) && process.WaitReady(std::chrono::seconds(120), &error);
  EXPECT_TRUE(started) << error;
}

TestDaemon::~TestDaemon() {
  if (started && process.pid() > 0) {
    EXPECT_EQ(process.Stop(SIGTERM), 0) << process.Log();
  }
}

coop::Stats TestDaemon::Stats() const {
  auto s = Client().GetStats();
  EXPECT_TRUE(s) << s.error().message;
  return s ? *s : coop::Stats{};
}

const coop::TierStats* TestDaemon::Disk(const coop::Stats& s) const {
  for (const auto& t : s.tiers) {
    if (t.name == "disk") return &t;
  }
  return nullptr;
}

coop::Spec BlockReduceF32() {
  coop::Spec s;
  s.family = "block_reduce";
  s.method = "sum";
  s.dtype = "float32";
  s.block = {256};
  s.arch = "sm_90";
  return s;
}

std::string CompileKernel(const std::string& source, bool ptx, const std::string& arch) {
  nvrtcProgram prog = nullptr;
  EXPECT_EQ(nvrtcCreateProgram(&prog, source.c_str(), "kernel.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const std::string arch_option = "-arch=" + arch;
  // The toolkit's include directory, for kernels that use <cuda_fp16.h> and friends.
  const std::string include_option = "-I" CUDA_INCLUDE_DIR;
  std::vector<const char*> opts = {"-rdc=true", arch_option.c_str(), include_option.c_str()};
  if (!ptx) opts.push_back("-dlto");
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(prog, log.data());
  EXPECT_EQ(r, NVRTC_SUCCESS) << log;
  std::string out;
  size_t size = 0;
  if (ptx) {
    nvrtcGetPTXSize(prog, &size);
    out.resize(size);
    nvrtcGetPTX(prog, out.data());
    if (!out.empty() && out.back() == '\0') out.pop_back();
  } else {
    nvrtcGetLTOIRSize(prog, &size);
    out.resize(size);
    nvrtcGetLTOIR(prog, out.data());
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

std::string LinkToPtx(const std::vector<std::string>& modules) {
  nvJitLinkHandle h = nullptr;
  const char* opts[] = {"-arch=sm_90", "-lto", "-ptx"};
  EXPECT_EQ(nvJitLinkCreate(&h, 3, opts), NVJITLINK_SUCCESS);
  for (const auto& m : modules) {
    EXPECT_EQ(nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, m.data(), m.size(), "module"),
              NVJITLINK_SUCCESS);
  }
  std::string ptx;
  if (nvJitLinkComplete(h) == NVJITLINK_SUCCESS) {
    size_t n = 0;
    nvJitLinkGetLinkedPtxSize(h, &n);
    ptx.resize(n);
    nvJitLinkGetLinkedPtx(h, ptx.data());
  } else {
    size_t n = 0;
    nvJitLinkGetErrorLogSize(h, &n);
    std::string log(n, '\0');
    nvJitLinkGetErrorLog(h, log.data());
    ADD_FAILURE() << "link to PTX failed: " << log;
  }
  nvJitLinkDestroy(&h);
  return ptx;
}

std::string BlockSumKernel(const coop::Artifact& a) {
  const auto& e = a.parts.at(0).entries.at(0);
  return e.declaration + "\n" +
         "extern \"C\" __global__ void block_sums(const float* in, float* out) {\n"
         "  __shared__ __align__(" +
         std::to_string(a.parts[0].temp_storage_align) + ") unsigned char temp[" +
         std::to_string(a.parts[0].temp_storage_bytes) +
         "];\n"
         "  float v = in[blockIdx.x * 256 + threadIdx.x];\n"
         "  float r = " +
         e.symbol +
         "(temp, v);\n"
         "  if (threadIdx.x == 0) out[blockIdx.x] = r;\n"
         "}\n";
}

}  // namespace coopd_test

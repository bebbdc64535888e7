// gpu_check: runs coopd artifacts on a GPU and checks every result against a CPU reference.
//
// The artifacts (LTO-IR, C headers and a manifest) are made by coopd on a machine without a GPU
// (make_artifacts.sh); this program needs no gRPC: for each case it compiles a small kernel
// that calls the artifact's entry points with NVRTC, links kernel + artifact with nvJitLink
// exactly as a frontend would, loads the cubin with the driver API, runs it on random data and
// compares. Exit status 0 when every case passes; prints "SKIP" and exits 0 without a GPU.
//
// usage: gpu_check ARTIFACT_DIR
#include <cuda.h>
#include <nvJitLink.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

#define CU(x)                                                                         \
  do {                                                                                \
    CUresult r_ = (x);                                                                \
    if (r_ != CUDA_SUCCESS) {                                                         \
      const char* s_ = nullptr;                                                       \
      cuGetErrorString(r_, &s_);                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?"); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Part {
  std::string symbol;
  std::string bytes;
};

struct Case {
  std::string name;
  std::vector<Part> parts;
};

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

// Kernel source: the artifact's header (declarations), then `body` with @S<i>@ and @B<i>@
// replaced by part i's symbol and temp-storage bytes.
CUmodule Build(const std::string& dir, const Case& c, std::string body) {
  for (size_t i = 0; i < c.parts.size(); ++i) {
    body = Replace(body, "@S" + std::to_string(i) + "@", c.parts[i].symbol);
    body = Replace(body, "@B" + std::to_string(i) + "@", c.parts[i].bytes);
  }
  const std::string source = Read(dir + "/" + c.name + ".h") + "\n" + body;
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, source.c_str(), "kernel.cu", 0, nullptr, nullptr);
  const char* opts[] = {"-dlto", "-rdc=true", "-arch=sm_90"};
  if (nvrtcCompileProgram(prog, 3, opts) != NVRTC_SUCCESS) {
    size_t n;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    std::fprintf(stderr, "%s: kernel does not compile:\n%s\n%s\n", c.name.c_str(), log.c_str(),
                 source.c_str());
    std::exit(1);
  }
  size_t n;
  nvrtcGetLTOIRSize(prog, &n);
  std::string kernel(n, '\0');
  nvrtcGetLTOIR(prog, kernel.data());
  nvrtcDestroyProgram(&prog);

  const std::string artifact = Read(dir + "/" + c.name + ".ltoir");
  nvJitLinkHandle h;
  const char* lopts[] = {"-arch=sm_90", "-lto", "-optimize-unused-variables"};
  nvJitLinkCreate(&h, 3, lopts);
  nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, kernel.data(), kernel.size(), "kernel");
  nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, artifact.data(), artifact.size(), "artifact");
  if (nvJitLinkComplete(h) != NVJITLINK_SUCCESS) {
    size_t m;
    nvJitLinkGetErrorLogSize(h, &m);
    std::string log(m, '\0');
    nvJitLinkGetErrorLog(h, log.data());
    std::fprintf(stderr, "%s: link failed:\n%s\n", c.name.c_str(), log.c_str());
    std::exit(1);
  }
  size_t cubin_size;
  nvJitLinkGetLinkedCubinSize(h, &cubin_size);
  std::string cubin(cubin_size, '\0');
  nvJitLinkGetLinkedCubin(h, cubin.data());
  nvJitLinkDestroy(&h);
  CUmodule module;
  CU(cuModuleLoadData(&module, cubin.data()));
  return module;
}

template <class T>
struct Buf {
  explicit Buf(size_t n, const std::vector<T>* init = nullptr) : n(n) {
    CU(cuMemAlloc(&ptr, n * sizeof(T)));
    if (init) CU(cuMemcpyHtoD(ptr, init->data(), n * sizeof(T)));
  }
  ~Buf() { cuMemFree(ptr); }
  std::vector<T> Get() const {
    std::vector<T> v(n);
    CU(cuMemcpyDtoH(v.data(), ptr, n * sizeof(T)));
    return v;
  }
  size_t n;
  CUdeviceptr ptr = 0;
};

void Launch(CUmodule m, unsigned grid, unsigned bx, unsigned by, std::vector<void*> args) {
  CUfunction f;
  CU(cuModuleGetFunction(&f, m, "k"));
  CU(cuLaunchKernel(f, grid, 1, 1, bx, by, 1, 0, nullptr, args.data(), nullptr));
  CU(cuCtxSynchronize());
}

template <class T>
std::vector<T> Random(size_t n, int64_t lo, int64_t hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      x = static_cast<T>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
    }
  }
  return v;
}

int failures = 0;

template <class T>
void Expect(const char* name, const std::vector<T>& got, const std::vector<T>& want,
            double tol = 0) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    const bool ok = tol == 0 ? got[i] == want[i] : std::fabs(g - w) <= tol * (1 + std::fabs(w));
    if (!ok && bad++ == 0) first = i;
  }
  if (bad) {
    ++failures;
    std::printf("FAIL %-20s %zu of %zu wrong; first at %zu: got %.17g, want %.17g\n", name, bad,
                want.size(), first, static_cast<double>(got[first]),
                static_cast<double>(want[first]));
  } else {
    std::printf("PASS %-20s %zu values\n", name, want.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gpu_check ARTIFACT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int count = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    std::printf("SKIP: no GPU\n");
    return 0;
  }
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  char name[256];
  cuDeviceGetName(name, sizeof(name), dev);
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  std::printf("device: %s\n", name);

  std::map<std::string, Case> cases;
  std::istringstream manifest(Read(dir + "/manifest.txt"));
  for (std::string line; std::getline(manifest, line);) {
    std::istringstream f(line);
    Case c;
    f >> c.name;
    for (std::string p; f >> p;) {
      c.parts.push_back({p.substr(0, p.find(':')), p.substr(p.find(':') + 1)});
    }
    cases[c.name] = c;
  }
  auto get = [&](const char* n) -> const Case& {
    if (!cases.count(n)) {
      std::fprintf(stderr, "case %s missing from the manifest\n", n);
      std::exit(1);
    }
    return cases[n];
  };
  const unsigned blocks = 2048;

  {  // block_reduce sum float32, 256 threads
    CUmodule m = Build(dir, get("reduce_sum_f32"), R"(
extern "C" __global__ void k(const float* in, float* out) {
  __shared__ __align__(16) unsigned char t0[@B0@];
  float r = @S0@(t0, in[blockIdx.x * 256 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = r;
})");
    auto in = Random<float>(blocks * 256, -1, 1, 1);
    Buf<float> din(in.size(), &in), dout(blocks);
    Launch(m, blocks, 256, 1, {&din.ptr, &dout.ptr});
    std::vector<float> want(blocks);
    for (unsigned b = 0; b < blocks; ++b) {
      double s = 0;
      for (int i = 0; i < 256; ++i) s += in[b * 256 + i];
      want[b] = static_cast<float>(s);
    }
    Expect("reduce_sum_f32", dout.Get(), want, 1e-4);
  }
  {  // block_reduce max int32, 16x16 block, 4 items per thread, raking
    CUmodule m = Build(dir, get("reduce_max_i32_2d"), R"(
extern "C" __global__ void k(const int* in, int* out) {
  __shared__ __align__(16) unsigned char t0[@B0@];
  const int tid = threadIdx.y * 16 + threadIdx.x;
  int v[4];
  for (int i = 0; i < 4; ++i) v[i] = in[(blockIdx.x * 256 + tid) * 4 + i];
  int r = @S0@(t0, v);
  if (tid == 0) out[blockIdx.x] = r;
})");
    auto in = Random<int32_t>(blocks * 1024, -1000000, 1000000, 2);
    Buf<int32_t> din(in.size(), &in), dout(blocks);
    Launch(m, blocks, 16, 16, {&din.ptr, &dout.ptr});
    std::vector<int32_t> want(blocks);
    for (unsigned b = 0; b < blocks; ++b) {
      want[b] = *std::max_element(in.begin() + b * 1024, in.begin() + (b + 1) * 1024);
    }
    Expect("reduce_max_i32_2d", dout.Get(), want);
  }
  {  // block_scan exclusive_sum int32, 128 threads x 4 items, warp_scans, with the aggregate
    CUmodule m = Build(dir, get("scan_exsum_i32"), R"(
extern "C" __global__ void k(const int* in, int* out, int* aggs) {
  __shared__ __align__(16) unsigned char t0[@B0@];
  const int base = (blockIdx.x * 128 + threadIdx.x) * 4;
  int v[4], o[4], agg;
  for (int i = 0; i < 4; ++i) v[i] = in[base + i];
  @S0@_aggregate(t0, v, o, &agg);
  for (int i = 0; i < 4; ++i) out[base + i] = o[i];
  if (threadIdx.x == 127) aggs[blockIdx.x] = agg;
})");
    auto in = Random<int32_t>(blocks * 512, 0, 100, 3);
    Buf<int32_t> din(in.size(), &in), dout(in.size()), dagg(blocks);
    Launch(m, blocks, 128, 1, {&din.ptr, &dout.ptr, &dagg.ptr});
    std::vector<int32_t> want(in.size()), want_agg(blocks);
    for (unsigned b = 0; b < blocks; ++b) {
      int32_t s = 0;
      for (int i = 0; i < 512; ++i) {
        want[b * 512 + i] = s;
        s += in[b * 512 + i];
      }
      want_agg[b] = s;
    }
    Expect("scan_exsum_i32", dout.Get(), want);
    Expect("scan_exsum_i32.agg", dagg.Get(), want_agg);
  }
  {  // block_scan inclusive_scan max int64, 64 threads
    CUmodule m = Build(dir, get("scan_max_i64"), R"(
extern "C" __global__ void k(const long long* in, long long* out) {
  __shared__ __align__(16) unsigned char t0[@B0@];
  const int i = blockIdx.x * 64 + threadIdx.x;
  out[i] = @S0@(t0, in[i]);
})");
    auto in = Random<int64_t>(blocks * 64, -(int64_t{1} << 40), int64_t{1} << 40, 4);
    Buf<int64_t> din(in.size(), &in), dout(in.size());
    Launch(m, blocks, 64, 1, {&din.ptr, &dout.ptr});
    std::vector<int64_t> want(in.size());
    for (unsigned b = 0; b < blocks; ++b) {
      int64_t mx = in[b * 64];
      for (int i = 0; i < 64; ++i) want[b * 64 + i] = mx = std::max(mx, in[b * 64 + i]);
    }
    Expect("scan_max_i64", dout.Get(), want);
  }
  {  // warp_reduce sum float64, logical warps of 16 in 128-thread blocks
    CUmodule m = Build(dir, get("warp_sum_f64"), R"(
extern "C" __global__ void k(const double* in, double* out) {
  __shared__ __align__(16) unsigned char t0[8][@B0@];
  const int w = threadIdx.x / 16;
  double r = @S0@(t0[w], in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x % 16 == 0) out[blockIdx.x * 8 + w] = r;
})");
    auto in = Random<double>(blocks * 128, -1, 1, 5);
    Buf<double> din(in.size(), &in), dout(blocks * 8);
    Launch(m, blocks, 128, 1, {&din.ptr, &dout.ptr});
    std::vector<double> want(blocks * 8);
    for (size_t g = 0; g < want.size(); ++g) {
      double s = 0;
      for (int i = 0; i < 16; ++i) s += in[g * 16 + i];
      want[g] = s;
    }
    Expect("warp_sum_f64", dout.Get(), want, 1e-12);
  }
  {  // warp_scan inclusive_sum int32, logical warps of 8
    CUmodule m = Build(dir, get("warp_incsum_i32"), R"(
extern "C" __global__ void k(const int* in, int* out) {
  __shared__ __align__(16) unsigned char t0[16][@B0@];
  const int i = blockIdx.x * 128 + threadIdx.x;
  out[i] = @S0@(t0[threadIdx.x / 8], in[i]);
})");
    auto in = Random<int32_t>(blocks * 128, -50, 50, 6);
    Buf<int32_t> din(in.size(), &in), dout(in.size());
    Launch(m, blocks, 128, 1, {&din.ptr, &dout.ptr});
    std::vector<int32_t> want(in.size());
    for (size_t g = 0; g < in.size() / 8; ++g) {
      int32_t s = 0;
      for (int i = 0; i < 8; ++i) want[g * 8 + i] = s += in[g * 8 + i];
    }
    Expect("warp_incsum_i32", dout.Get(), want);
  }
  {  // bundle: load (warp_transpose, guarded, default 0) -> exclusive_sum -> store (guarded)
    CUmodule m = Build(dir, get("tile_pipeline"), R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ __align__(16) unsigned char t0[@B0@];
  __shared__ __align__(16) unsigned char t1[@B1@];
  __shared__ __align__(16) unsigned char t2[@B2@];
  int items[4];
  const int tile = blockIdx.x * 512;
  const int valid = n - tile < 512 ? n - tile : 512;
  @S0@(t0, in + tile, items, valid, 0);
  @S1@(t1, items, items);
  @S2@(t2, out + tile, items, valid);
})");
    const int n = static_cast<int>(blocks * 512 - 300);  // the last tile is partial
    auto in = Random<int32_t>(n, 0, 100, 7);
    std::vector<int32_t> sentinel(blocks * 512, -7);
    Buf<int32_t> din(in.size(), &in), dout(sentinel.size(), &sentinel);
    int n_arg = n;
    Launch(m, blocks, 128, 1, {&din.ptr, &dout.ptr, &n_arg});
    std::vector<int32_t> want(sentinel);
    for (int t = 0; t * 512 < n; ++t) {
      int32_t s = 0;
      for (int i = t * 512; i < std::min(n, (t + 1) * 512); ++i) {
        want[i] = s;
        s += in[i];
      }
    }
    Expect("tile_pipeline", dout.Get(), want);
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "ALL PASSED", failures);
  return failures ? 1 : 0;
}

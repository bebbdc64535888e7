// gpu_suite: coopd artifacts on a GPU: correctness of every family, speed against CUB compiled
// into the kernel by nvcc, and the linked cubins for the SASS checks (sass_check.sh).
//
// Artifacts come from make_artifacts.sh (a real coopd on a machine without a GPU). For each case
// this program compiles a small kernel that calls the artifact's entry points with NVRTC
// (-dlto), links kernel + artifact with nvJitLink (-lto) exactly as a frontend would, writes the
// cubin to --cubins DIR, loads it with the driver API, runs it on fresh random data (seed
// printed; --seed repeats a run) with every output poisoned first, and compares with a CPU
// reference. The timed kernels (bench_kernels.cuh) are built twice from one source: linked as
// above, and natively with CUB compiled in by nvcc (this file), and run with the same launch
// configuration, timed with CUDA events, median of --reps runs, interleaved.
//
// Lines starting with "RESULT" are for run_gpu_suite.sh's summary:
//   RESULT check <case> PASS|FAIL|SKIP <detail>
//   RESULT bench <kernel> <linked ms> <native ms> <ratio> <linked GB/s> <native GB/s> <bytes>
//   RESULT copy <ms> <GB/s>      RESULT devreduce <ms> <GB/s>
//
// usage: gpu_suite ARTIFACT_DIR [--kernels bench_kernels.cuh] [--cubins DIR] [--seed N]
//                  [--check-only] [--bench-only] [--small] [--link-only] [--reps N]
//   --small      few blocks per check, no benchmarks (for compute-sanitizer)
//   --link-only  build and write every linked cubin; needs no GPU (SASS checks in CI or here)
// Exit status: 0 when every check passes; 1 on a failure; "SKIP: no GPU" and 0 without a GPU.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvJitLink.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/device/device_reduce.cuh>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_kernels.cuh"

#ifndef COOP_SUITE_DIR
#define COOP_SUITE_DIR "."
#endif

namespace {

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "gpu_suite: %s\n", msg.c_str());
  std::fflush(stdout);
  std::exit(1);
}

#define CU(x)                                                                                     \
  do {                                                                                            \
    CUresult r_ = (x);                                                                            \
    if (r_ != CUDA_SUCCESS) {                                                                     \
      const char* s_ = nullptr;                                                                   \
      cuGetErrorString(r_, &s_);                                                                  \
      Die(std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #x ": " + (s_ ? s_ : "?")); \
    }                                                                                             \
  } while (0)

#define CUDART(x)                                                               \
  do {                                                                          \
    cudaError_t r_ = (x);                                                       \
    if (r_ != cudaSuccess) {                                                    \
      Die(std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #x ": " + \
          cudaGetErrorString(r_));                                              \
    }                                                                           \
  } while (0)

#define NVRTC(x)                                                                  \
  do {                                                                            \
    nvrtcResult r_ = (x);                                                         \
    if (r_ != NVRTC_SUCCESS) Die(std::string(#x ": ") + nvrtcGetErrorString(r_)); \
  } while (0)

#define NVJL(x)                                                                                  \
  do {                                                                                           \
    nvJitLinkResult r_ = (x);                                                                    \
    if (r_ != NVJITLINK_SUCCESS) Die(std::string(#x ": nvJitLink error ") + std::to_string(r_)); \
  } while (0)

struct Options {
  std::string dir;
  std::string kernels = COOP_SUITE_DIR "/bench_kernels.cuh";
  std::string cubins;
  uint64_t seed = 0;
  bool check = true, bench = true, small = false, link_only = false;
  int reps = 50;
};
Options opt;
std::mt19937_64 rng;
int failures = 0, passes = 0, skips = 0;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Part {
  std::string symbol;
  std::string bytes;
};
std::map<std::string, std::vector<Part>> manifest;

bool Have(const std::string& name) {
  return manifest.count(name) != 0;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

// Compiles `source` with NVRTC -dlto, links it with the LTO-IR of the artifacts `arts` with
// nvJitLink -lto (as a frontend would), writes <label>.cubin under --cubins and loads it (not
// with --link-only, which returns null). Every failure dies with the compiler's or linker's log.
CUmodule CompileAndLink(const std::string& label, const std::string& source,
                        const std::vector<std::string>& arts) {
  nvrtcProgram prog;
  NVRTC(nvrtcCreateProgram(&prog, source.c_str(), (label + ".cu").c_str(), 0, nullptr, nullptr));
  // The toolkit's include directory, for the cuda_fp16.h / cuda_bf16.h that float16 and
  // bfloat16 artifacts' headers include.
  const char* cuda_home = std::getenv("CUDA_HOME");
  const std::string inc =
      std::string("-I") + (cuda_home ? cuda_home : "/usr/local/cuda") + "/include";
  const char* copts[] = {"-dlto", "-rdc=true", "-arch=sm_90", "-std=c++17", inc.c_str()};
  const nvrtcResult cr = nvrtcCompileProgram(prog, 5, copts);
  size_t n = 0;
  NVRTC(nvrtcGetProgramLogSize(prog, &n));
  std::string log(n, '\0');
  NVRTC(nvrtcGetProgramLog(prog, log.data()));
  if (cr != NVRTC_SUCCESS) Die(label + ": kernel does not compile:\n" + log + "\n" + source);
  NVRTC(nvrtcGetLTOIRSize(prog, &n));
  std::string kernel(n, '\0');
  NVRTC(nvrtcGetLTOIR(prog, kernel.data()));
  NVRTC(nvrtcDestroyProgram(&prog));

  nvJitLinkHandle h;
  const char* lopts[] = {"-arch=sm_90", "-lto", "-optimize-unused-variables"};
  NVJL(nvJitLinkCreate(&h, 3, lopts));
  NVJL(nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, kernel.data(), kernel.size(), "kernel"));
  for (const auto& art : arts) {
    const std::string ltoir = Read(opt.dir + "/" + art + ".ltoir");
    NVJL(nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, ltoir.data(), ltoir.size(), art.c_str()));
    // The artifact's link inputs (a user operator's LTO-IR): <art>.op<N>.ltoir.
    for (int i = 0;; ++i) {
      const std::string path = opt.dir + "/" + art + ".op" + std::to_string(i) + ".ltoir";
      if (!std::ifstream(path)) break;
      const std::string op = Read(path);
      const std::string op_name = art + ".op" + std::to_string(i);
      NVJL(nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, op.data(), op.size(), op_name.c_str()));
    }
  }
  if (nvJitLinkComplete(h) != NVJITLINK_SUCCESS) {
    size_t m = 0;
    NVJL(nvJitLinkGetErrorLogSize(h, &m));
    std::string elog(m, '\0');
    NVJL(nvJitLinkGetErrorLog(h, elog.data()));
    Die(label + ": link failed:\n" + elog);
  }
  size_t cubin_size = 0;
  NVJL(nvJitLinkGetLinkedCubinSize(h, &cubin_size));
  std::string cubin(cubin_size, '\0');
  NVJL(nvJitLinkGetLinkedCubin(h, cubin.data()));
  NVJL(nvJitLinkDestroy(&h));
  if (!opt.cubins.empty()) {
    std::ofstream(opt.cubins + "/" + label + ".cubin", std::ios::binary) << cubin;
  }
  if (opt.link_only) return nullptr;
  CUmodule module;
  CU(cuModuleLoadData(&module, cubin.data()));
  return module;
}

// One artifact's kernel: its declarations, then `body` with @S<i>@/@B<i>@ replaced by part i's
// symbol and temp bytes and @T@ by the value type.
CUmodule Build(const std::string& art, std::string body, const std::string& type = "") {
  const auto& parts = manifest.at(art);
  for (size_t i = 0; i < parts.size(); ++i) {
    body = Replace(body, "@S" + std::to_string(i) + "@", parts[i].symbol);
    body = Replace(body, "@B" + std::to_string(i) + "@", parts[i].bytes);
  }
  body = Replace(body, "@T@", type);
  return CompileAndLink(art, Read(opt.dir + "/" + art + ".h") + "\n" + body, {art});
}

// ---- device buffers, poisoning, launching ----------------------------------------------------

template <class T>
struct Buf {
  explicit Buf(size_t n) : n(n) { CU(cuMemAlloc(&ptr, n * sizeof(T))); }
  Buf(const std::vector<T>& init) : Buf(init.size()) { Put(init); }
  ~Buf() { cuMemFree(ptr); }
  Buf(const Buf&) = delete;
  void Put(const std::vector<T>& v) { CU(cuMemcpyHtoD(ptr, v.data(), n * sizeof(T))); }
  // Fills with a pattern no check accepts as an output: NaN for floats, 0xA5.. for integers.
  void Poison() { CU(cuMemsetD8(ptr, std::is_floating_point_v<T> ? 0xFF : 0xA5, n * sizeof(T))); }
  std::vector<T> Get() const {
    std::vector<T> v(n);
    CU(cuMemcpyDtoH(v.data(), ptr, n * sizeof(T)));
    return v;
  }
  size_t n;
  CUdeviceptr ptr = 0;
};

struct Dim {
  unsigned x, y = 1, z = 1;
  unsigned count() const { return x * y * z; }
};

void Launch(CUmodule m, const char* name, unsigned grid, Dim block, std::vector<void*> args) {
  CUfunction f;
  CU(cuModuleGetFunction(&f, m, name));
  CU(cuLaunchKernel(f, grid, 1, 1, block.x, block.y, block.z, 0, nullptr, args.data(), nullptr));
  CU(cuCtxSynchronize());
}

template <class T>
std::vector<T> Random(size_t n, double lo, double hi) {
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      x = static_cast<T>(std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo),
                                                                static_cast<int64_t>(hi))(rng));
    }
  }
  return v;
}

void Report(const std::string& name, bool ok, const std::string& detail) {
  (ok ? passes : failures)++;
  std::printf("RESULT check %-28s %s %s\n", name.c_str(), ok ? "PASS" : "FAIL", detail.c_str());
  std::fflush(stdout);
}

// A check of a known coopd bug: failing is XFAIL (not a failure of the run), passing is XPASS
// (counted as a pass: the bug is gone, and the check can become an ordinary one).
int known_failures = 0;
void ReportKnownBug(const std::string& name, bool ok, const std::string& detail,
                    const std::string& bug) {
  (ok ? passes : known_failures)++;
  std::printf("RESULT check %-28s %s %s (known coopd bug: %s)\n", name.c_str(),
              ok ? "XPASS" : "XFAIL", detail.c_str(), bug.c_str());
  std::fflush(stdout);
}

void Skip(const std::string& name, const std::string& why) {
  ++skips;
  std::printf("RESULT check %-28s SKIP %s\n", name.c_str(), why.c_str());
}

// Compares element by element; `tol` is relative (0: exact).
template <class T>
bool Expect(const std::string& name, const std::vector<T>& got, const std::vector<T>& want,
            double tol = 0, const std::vector<bool>* mask = nullptr) {
  size_t bad = 0, first = 0, checked = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (mask && !(*mask)[i]) continue;
    ++checked;
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    const bool ok = tol == 0 ? got[i] == want[i] : std::fabs(g - w) <= tol * (1 + std::fabs(w));
    if (!ok && bad++ == 0) first = i;
  }
  char detail[256];
  if (bad) {
    std::snprintf(detail, sizeof(detail), "%zu of %zu wrong; first at %zu: got %.17g, want %.17g",
                  bad, checked, first, static_cast<double>(got[first]),
                  static_cast<double>(want[first]));
  } else {
    std::snprintf(detail, sizeof(detail), "%zu values", checked);
  }
  Report(name, bad == 0, detail);
  return bad == 0;
}

// ---- correctness -------------------------------------------------------------------------------

unsigned Blocks() {
  return opt.small ? 8 : 1024;
}

// Linear thread id in a (possibly 2D/3D) block, as CUB defines it.
const char* kTid =
    "const int tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;\n"
    "const int nthreads = blockDim.x * blockDim.y * blockDim.z;\n";

// CPU references over consecutive segments of `len` inputs (a block's or a logical warp's).
// Reductions: sums in double when `in_double` (floating-point sums), else folded with op.
template <class T>
std::vector<T> SegmentReduce(const std::vector<T>& in, size_t len, const std::function<T(T, T)>& op,
                             bool in_double) {
  std::vector<T> want(in.size() / len);
  for (size_t g = 0; g < want.size(); ++g) {
    double sum = 0;
    T acc = in[g * len];
    for (size_t i = 0; i < len; ++i) {
      sum += static_cast<double>(in[g * len + i]);
      if (i) acc = op(acc, in[g * len + i]);
    }
    want[g] = in_double ? static_cast<T>(sum) : acc;
  }
  return want;
}

// Scans: inclusive, or exclusive seeded by `init` (or `identity` without one); `totals` gets
// each segment's aggregate. Where CUB leaves an output undefined (the first exclusive output of a
// segment without an initial value, unless the op is a sum), `mask` is false.
template <class T>
std::vector<T> SegmentScan(const std::vector<T>& in, size_t len, bool exclusive, bool has_init,
                           T init, T identity, const std::function<T(T, T)>& op,
                           std::vector<T>* totals, std::vector<bool>* mask) {
  std::vector<T> want(in.size());
  mask->assign(in.size(), true);
  totals->resize(in.size() / len);
  for (size_t g = 0; g < in.size() / len; ++g) {
    T acc = has_init ? init : identity, total = in[g * len];
    for (size_t i = 0; i < len; ++i) {
      const T x = in[g * len + i];
      if (i) total = op(total, x);
      if (exclusive) {
        want[g * len + i] = acc;
        acc = op(acc, x);
      } else {
        acc = i == 0 ? x : op(acc, x);
        want[g * len + i] = acc;
      }
    }
    (*totals)[g] = total;
    if (exclusive && !has_init && identity != T(0)) (*mask)[g * len] = false;
  }
  return want;
}

// Block reduce: `items` inputs per thread (blocked), result of tid 0 per block.
// With `state` (a stateful user operator), the entry's trailing op_state gets a pointer to an
// int in device memory holding *state.
template <class T>
void CheckBlockReduce(const std::string& art, Dim block, int items, const char* call,
                      std::function<T(T, T)> op, double lo, double hi, double tol,
                      const int* state = nullptr) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string in_expr =
      std::string(items == 1 ? "in[base]" : "v") + (state ? ", op_state" : "");
  const std::string body = std::string(
                               "extern \"C\" __global__ void k(const @T@* in, @T@* out, "
                               "void* op_state) {\n"
                               "  __shared__ __align__(16) unsigned char t0[@B0@];\n  ") +
                           kTid + "  const long base = ((long)blockIdx.x * nthreads + tid) * " +
                           std::to_string(items) + ";\n  @T@ v[" + std::to_string(items) +
                           "];\n  for (int i = 0; i < " + std::to_string(items) +
                           "; ++i) v[i] = in[base + i];\n  @T@ r = " + call + "(t0, " + in_expr +
                           ");\n  if (tid == 0) out[blockIdx.x] = r;\n}\n";
  const char* tname = std::is_same_v<T, float>      ? "float"
                      : std::is_same_v<T, double>   ? "double"
                      : std::is_same_v<T, int>      ? "int"
                      : std::is_same_v<T, unsigned> ? "unsigned int"
                                                    : "?";
  CUmodule m = Build(art, body, tname);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t per = size_t(block.count()) * items;
  auto in = Random<T>(blocks * per, lo, hi);
  Buf<T> din(in), dout(blocks);
  Buf<int> dstate(std::vector<int>{state ? *state : 0});
  dout.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr, &dstate.ptr});
  const auto want = SegmentReduce<T>(in, per, op, tol != 0);
  Expect(art, dout.Get(), want, tol);
  CU(cuModuleUnload(m));
}

// Block scan over `items` blocked items per thread. kind: "inclusive", "exclusive" (with init).
// With aggregate: the `_aggregate` entry, whose block aggregate tid 0 writes out.
template <class T>
void CheckBlockScan(const std::string& art, const char* tname, Dim block, int items, bool exclusive,
                    bool has_init, bool aggregate, std::function<T(T, T)> op, T identity, double lo,
                    double hi) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string N = std::to_string(items);
  std::string call;
  if (items == 1) {
    call = std::string("o[0] = @S0@") + (aggregate ? "_aggregate" : "") + "(t0, v[0]" +
           (has_init ? ", init" : "") + (aggregate ? ", &agg" : "") + ");\n";
  } else {
    call = std::string("@S0@") + (aggregate ? "_aggregate" : "") + "(t0, v, o" +
           (has_init ? ", init" : "") + (aggregate ? ", &agg" : "") + ");\n";
  }
  const std::string body =
      std::string(
          "extern \"C\" __global__ void k(const @T@* in, @T@* out, @T@* aggs, "
          "@T@ init) {\n  __shared__ __align__(16) unsigned char t0[@B0@];\n  ") +
      kTid + "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N + ";\n  @T@ v[" + N +
      "], o[" + N + "], agg;\n  for (int i = 0; i < " + N + "; ++i) v[i] = in[base + i];\n  " +
      call + "  for (int i = 0; i < " + N + "; ++i) out[base + i] = o[i];\n" +
      (aggregate ? "  if (tid == 0) aggs[blockIdx.x] = agg;\n" : "") + "}\n";
  CUmodule m = Build(art, body, tname);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t per = size_t(block.count()) * items;
  auto in = Random<T>(blocks * per, lo, hi);
  T init = Random<T>(1, lo, hi)[0];
  Buf<T> din(in), dout(in.size()), dagg(blocks);
  dout.Poison();
  dagg.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr, &dagg.ptr, &init});
  std::vector<T> want_agg;
  std::vector<bool> mask;
  const auto want =
      SegmentScan<T>(in, per, exclusive, has_init, init, identity, op, &want_agg, &mask);
  Expect(art, dout.Get(), want, 0, &mask);
  if (aggregate) Expect(art + ".aggregate", dagg.Get(), want_agg);
  CU(cuModuleUnload(m));
}

// Rank of item i of thread t in each arrangement (the index it occupies in the tile).
enum class Arr { kBlocked, kStriped, kWarpStriped };
size_t Rank(Arr a, int t, int i, int threads, int items) {
  switch (a) {
    case Arr::kBlocked:
      return size_t(t) * items + i;
    case Arr::kStriped:
      return size_t(i) * threads + t;
    default:
      return size_t(t / 32) * 32 * items + size_t(i) * 32 + t % 32;
  }
}

// block_load + block_store, one algorithm: unguarded, guarded and guarded-with-default loads, the
// items as they landed in registers, unguarded and guarded stores. The last tile is partial.
void CheckLoadStore(const std::string& alg) {
  const std::string art = "ls_" + alg;
  if (!Have(art)) return Skip(art, "artifact missing");
  const Dim block{32, 4};
  const int N = 4, T = 128, tile = T * N;
  const std::string body = std::string(R"(
extern "C" __global__ void k(const int* in, int* out, int* reg, int* reg_g, int* reg_d,
                             int* out_g, int valid_last) {
  __shared__ __align__(16) unsigned char t0[@B0@], t1[@B1@], t2[@B2@], t3[@B3@], t4[@B4@];
  )") + kTid + R"(
  const long tile = (long)blockIdx.x * 512;
  const int valid = blockIdx.x == gridDim.x - 1 ? valid_last : 512;
  const long r = ((long)blockIdx.x * 128 + tid) * 4;
  int items[4];
  @S0@(t0, in + tile, items);
  for (int i = 0; i < 4; ++i) reg[r + i] = items[i];
  @S3@(t3, out + tile, items);
  for (int i = 0; i < 4; ++i) items[i] = -3;
  @S1@(t1, in + tile, items, valid);
  for (int i = 0; i < 4; ++i) reg_g[r + i] = items[i];
  @S2@(t2, in + tile, items, valid, -9);
  for (int i = 0; i < 4; ++i) reg_d[r + i] = items[i];
  @S4@(t4, out_g + tile, items, valid);
}
)";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t n = size_t(blocks) * tile;
  const int valid_last =
      tile - 1 - static_cast<int>(std::uniform_int_distribution<int>(0, 300)(rng));
  auto in = Random<int32_t>(n, -1000000, 1000000);
  Buf<int32_t> din(in), dout(n), dreg(n), dreg_g(n), dreg_d(n), dout_g(n);
  for (auto* b : {&dout, &dreg, &dreg_g, &dreg_d, &dout_g}) b->Poison();
  Launch(m, "k", blocks, block,
         {&din.ptr, &dout.ptr, &dreg.ptr, &dreg_g.ptr, &dreg_d.ptr, &dout_g.ptr,
          const_cast<int*>(&valid_last)});
  const Arr arr = alg == "striped" ? Arr::kStriped : Arr::kBlocked;
  std::vector<int32_t> want_reg(n), want_d(n), want_out_g(n, int32_t(0xA5A5A5A5));
  for (unsigned b = 0; b < blocks; ++b) {
    const int valid = b == blocks - 1 ? valid_last : tile;
    for (int t = 0; t < T; ++t) {
      for (int i = 0; i < N; ++i) {
        const size_t rank = Rank(arr, t, i, T, N), pos = (size_t(b) * T + t) * N + i;
        want_reg[pos] = in[size_t(b) * tile + rank];
        const bool ok = static_cast<int>(rank) < valid;
        want_d[pos] = ok ? want_reg[pos] : -9;
      }
    }
    for (int j = 0; j < valid; ++j) want_out_g[size_t(b) * tile + j] = in[size_t(b) * tile + j];
  }
  // Guarded load: items past valid_items keep what the caller had (-3).
  std::vector<int32_t> want_g(want_reg);
  for (unsigned b = 0; b < blocks; ++b) {
    const int valid = b == blocks - 1 ? valid_last : tile;
    for (int t = 0; t < T; ++t) {
      for (int i = 0; i < N; ++i) {
        if (static_cast<int>(Rank(arr, t, i, T, N)) >= valid)
          want_g[(size_t(b) * T + t) * N + i] = -3;
      }
    }
  }
  Expect(art + ".load", dreg.Get(), want_reg);
  Expect(art + ".store", dout.Get(), in);
  Expect(art + ".load_guarded", dreg_g.Get(), want_g);
  Expect(art + ".load_guarded_default", dreg_d.Get(), want_d);
  Expect(art + ".store_guarded", dout_g.Get(), want_out_g);
  CU(cuModuleUnload(m));
}

// The bundle a tile kernel uses: guarded load (warp_transpose, default 0) -> exclusive_sum ->
// guarded store, 128 threads x 4 int32; the last tile is partial and the rest of the output
// must keep its sentinel.
void CheckTilePipeline() {
  const std::string art = "tile_pipeline";
  if (!Have(art)) return Skip(art, "artifact missing");
  CUmodule m = Build(art, R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ __align__(16) unsigned char t0[@B0@], t1[@B1@], t2[@B2@];
  int items[4];
  const int tile = blockIdx.x * 512;
  const int valid = n - tile < 512 ? n - tile : 512;
  @S0@(t0, in + tile, items, valid, 0);
  @S1@(t1, items, items);
  @S2@(t2, out + tile, items, valid);
})");
  if (!m) return;
  const unsigned blocks = Blocks();
  const int n = static_cast<int>(blocks * 512) - std::uniform_int_distribution<int>(1, 511)(rng);
  auto in = Random<int32_t>(n, 0, 100);
  std::vector<int32_t> sentinel(size_t(blocks) * 512, -7);
  Buf<int32_t> din(in), dout(sentinel);
  int n_arg = n;
  Launch(m, "k", blocks, {128}, {&din.ptr, &dout.ptr, &n_arg});
  std::vector<int32_t> want(sentinel);
  for (int t = 0; t * 512 < n; ++t) {
    int32_t s = 0;
    for (int i = t * 512; i < std::min(n, (t + 1) * 512); ++i) {
      want[i] = s;
      s += in[i];
    }
  }
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// block_exchange: 5 parts (4 methods + a time-sliced blocked_to_striped), int16, 32x2 x 3 items.
void CheckExchange() {
  const std::string art = "exchange_i16_2d";
  if (!Have(art)) return Skip(art, "artifact missing");
  const Dim block{32, 2};
  const int T = 64, N = 3, tile = T * N;
  std::string body;
  for (int p = 0; p < 5; ++p) {
    const std::string P = std::to_string(p);
    body += "extern \"C\" __global__ void k" + P +
            "(const short* in, short* out) {\n  __shared__ __align__(16) unsigned char t[@B" + P +
            "@];\n  " + kTid +
            "  const long base = ((long)blockIdx.x * nthreads + tid) * 3;\n  short v[3], o[3];\n"
            "  for (int i = 0; i < 3; ++i) v[i] = in[base + i];\n  @S" +
            P + "@(t, v, o);\n  for (int i = 0; i < 3; ++i) out[base + i] = o[i];\n}\n";
  }
  CUmodule m = Build(art, body);
  if (!m) return;
  const struct {
    const char* name;
    Arr from, to;
  } methods[] = {{"striped_to_blocked", Arr::kStriped, Arr::kBlocked},
                 {"blocked_to_striped", Arr::kBlocked, Arr::kStriped},
                 {"warp_striped_to_blocked", Arr::kWarpStriped, Arr::kBlocked},
                 {"blocked_to_warp_striped", Arr::kBlocked, Arr::kWarpStriped},
                 {"blocked_to_striped.timesliced", Arr::kBlocked, Arr::kStriped}};
  const unsigned blocks = Blocks();
  for (int p = 0; p < 5; ++p) {
    auto in = Random<int16_t>(size_t(blocks) * tile, -30000, 30000);
    Buf<int16_t> din(in), dout(in.size());
    dout.Poison();
    Launch(m, ("k" + std::to_string(p)).c_str(), blocks, block, {&din.ptr, &dout.ptr});
    // Thread t's item i holds tile rank Rank(from, t, i) on input; on output it must hold the
    // item of rank Rank(to, t, i), which sat at (t', i') with Rank(from, t', i') == that rank.
    std::vector<size_t> where(tile);
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < N; ++i) where[Rank(methods[p].from, t, i, T, N)] = size_t(t) * N + i;
    std::vector<int16_t> want(in.size());
    for (unsigned b = 0; b < blocks; ++b)
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < N; ++i)
          want[size_t(b) * tile + size_t(t) * N + i] =
              in[size_t(b) * tile + where[Rank(methods[p].to, t, i, T, N)]];
    Expect(art + "." + methods[p].name, dout.Get(), want);
  }
  CU(cuModuleUnload(m));
}

// block_shuffle: offset, rotate (1 item), up, down (4 items); int64, 32x3.
void CheckShuffle() {
  const std::string art = "shuffle_i64_2d";
  if (!Have(art)) return Skip(art, "artifact missing");
  const Dim block{32, 3};
  const int T = 96, N = 4;
  const std::string body = std::string(R"(
extern "C" __global__ void k(const long long* in, long long* off, long long* rot,
                             long long* up, long long* down, int d, unsigned rd) {
  __shared__ __align__(16) unsigned char t0[@B0@], t1[@B1@], t2[@B2@], t3[@B3@];
  )") + kTid + R"(
  const long g = (long)blockIdx.x * nthreads + tid;
  off[g] = @S0@(t0, in[g * 4], d);
  rot[g] = @S1@(t1, in[g * 4], rd);
  long long v[4], p[4], q[4];
  for (int i = 0; i < 4; ++i) { v[i] = in[g * 4 + i]; p[i] = -1; q[i] = -2; }
  @S2@(t2, v, p);
  @S3@(t3, v, q);
  for (int i = 0; i < 4; ++i) { up[g * 4 + i] = p[i]; down[g * 4 + i] = q[i]; }
}
)";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  for (int d : {5, -7}) {
    auto in = Random<int64_t>(size_t(blocks) * T * N, -1e15, 1e15);
    unsigned rd = static_cast<unsigned>(std::uniform_int_distribution<int>(1, T - 1)(rng));
    Buf<int64_t> din(in), doff(size_t(blocks) * T), drot(size_t(blocks) * T), dup(in.size()),
        ddown(in.size());
    for (auto* b : {&doff, &drot, &dup, &ddown}) b->Poison();
    Launch(m, "k", blocks, block, {&din.ptr, &doff.ptr, &drot.ptr, &dup.ptr, &ddown.ptr, &d, &rd});
    std::vector<int64_t> w_off(doff.n), w_rot(drot.n), w_up(in.size()), w_down(in.size());
    for (unsigned b = 0; b < blocks; ++b) {
      auto at = [&](int t, int i) { return in[(size_t(b) * T + t) * N + i]; };
      for (int t = 0; t < T; ++t) {
        const size_t g = size_t(b) * T + t;
        w_off[g] = t + d >= 0 && t + d < T ? at(t + d, 0) : at(t, 0);
        w_rot[g] = at((t + rd) % T, 0);
        for (int i = 0; i < N; ++i) {
          const int r = t * N + i;  // blocked rank
          w_up[g * N + i] = r == 0 ? -1 : at((r - 1) / N, (r - 1) % N);
          w_down[g * N + i] = r == T * N - 1 ? -2 : at((r + 1) / N, (r + 1) % N);
        }
      }
    }
    const std::string sfx = d > 0 ? "" : ".neg";
    Expect(art + ".offset" + sfx, doff.Get(), w_off);
    Expect(art + ".rotate" + sfx, drot.Get(), w_rot);
    Expect(art + ".up" + sfx, dup.Get(), w_up);
    Expect(art + ".down" + sfx, ddown.Get(), w_down);
  }
  CU(cuModuleUnload(m));
}

// Warp reduce over logical warps of `lanes` in 128-thread blocks; lane 0 writes.
template <class T>
void CheckWarpReduce(const std::string& art, const char* tname, int lanes,
                     std::function<T(T, T)> op, double lo, double hi, double tol) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string L = std::to_string(lanes), W = std::to_string(128 / lanes);
  const std::string body =
      "extern \"C\" __global__ void k(const @T@* in, @T@* out) {\n"
      "  __shared__ __align__(16) unsigned char t0[" +
      W +
      "][@B0@];\n"
      "  const int w = threadIdx.x / " +
      L +
      ";\n"
      "  @T@ r = @S0@(t0[w], in[blockIdx.x * 128 + threadIdx.x]);\n"
      "  if (threadIdx.x % " +
      L + " == 0) out[blockIdx.x * " + W + " + w] = r;\n}\n";
  CUmodule m = Build(art, body, tname);
  if (!m) return;
  const unsigned blocks = Blocks();
  auto in = Random<T>(size_t(blocks) * 128, lo, hi);
  Buf<T> din(in), dout(in.size() / lanes);
  dout.Poison();
  Launch(m, "k", blocks, {128}, {&din.ptr, &dout.ptr});
  const auto want = SegmentReduce<T>(in, lanes, op, tol != 0);
  Expect(art, dout.Get(), want, tol);
  CU(cuModuleUnload(m));
}

// Warp scan over logical warps of `lanes` in 128-thread blocks.
template <class T>
void CheckWarpScan(const std::string& art, const char* tname, int lanes, bool exclusive,
                   bool has_init, bool aggregate, std::function<T(T, T)> op, T identity, double lo,
                   double hi) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string L = std::to_string(lanes), W = std::to_string(128 / lanes);
  const std::string body =
      "extern \"C\" __global__ void k(const @T@* in, @T@* out, @T@* aggs, @T@ init) {\n"
      "  __shared__ __align__(16) unsigned char t0[" +
      W +
      "][@B0@];\n"
      "  const int i = blockIdx.x * 128 + threadIdx.x;\n  @T@ agg;\n"
      "  out[i] = @S0@" +
      (aggregate ? "_aggregate" : "") + "(t0[threadIdx.x / " + L + "], in[i]" +
      (has_init ? ", init" : "") + (aggregate ? ", &agg" : "") + ");\n" +
      (aggregate ? "  aggs[i] = agg;\n" : "") + "}\n";
  CUmodule m = Build(art, body, tname);
  if (!m) return;
  const unsigned blocks = Blocks();
  auto in = Random<T>(size_t(blocks) * 128, lo, hi);
  T init = Random<T>(1, lo, hi)[0];
  Buf<T> din(in), dout(in.size()), dagg(in.size());
  dout.Poison();
  dagg.Poison();
  Launch(m, "k", blocks, {128}, {&din.ptr, &dout.ptr, &dagg.ptr, &init});
  std::vector<T> totals, want_agg;
  std::vector<bool> mask;
  const auto want =
      SegmentScan<T>(in, lanes, exclusive, has_init, init, identity, op, &totals, &mask);
  for (size_t i = 0; i < in.size(); ++i) want_agg.push_back(totals[i / lanes]);  // every lane
  Expect(art, dout.Get(), want, 0, &mask);
  if (aggregate) Expect(art + ".aggregate", dagg.Get(), want_agg);
  CU(cuModuleUnload(m));
}

// block_radix_sort (once the family lands): entry `void sym(void* temp, K* keys, int begin_bit,
// int end_bit)` on the thread's blocked keys; each tile must come back sorted.
template <class K>
void CheckRadixSort(const std::string& art, const char* kname, Dim block, int items,
                    bool descending) {
  if (!Have(art)) {
    return Skip(art, "artifact missing (block_radix_sort is not in this coopd's catalogue yet)");
  }
  const std::string N = std::to_string(items);
  const std::string body = std::string(
                               "extern \"C\" __global__ void k(const @T@* in, @T@* out) {\n"
                               "  __shared__ __align__(16) unsigned char t0[@B0@];\n  ") +
                           kTid + "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N +
                           ";\n  @T@ v[" + N + "];\n  for (int i = 0; i < " + N +
                           "; ++i) v[i] = in[base + i];\n  @S0@(t0, v, 0, " +
                           std::to_string(8 * sizeof(K)) + ");\n  for (int i = 0; i < " + N +
                           "; ++i) out[base + i] = v[i];\n}\n";
  CUmodule m = Build(art, body, kname);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto in = Random<K>(blocks * tile, double(std::numeric_limits<K>::min()),
                      double(std::numeric_limits<K>::max()));
  Buf<K> din(in), dout(in.size());
  dout.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr});
  std::vector<K> want(in);
  for (unsigned b = 0; b < blocks; ++b) {
    std::sort(want.begin() + b * tile, want.begin() + (b + 1) * tile);
    if (descending) std::reverse(want.begin() + b * tile, want.begin() + (b + 1) * tile);
  }
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// ---- families added after the first suite: sorts (pairs, bit ranges, guarded, user
// comparator), histogram, discontinuity, adjacent difference, scatter exchange, float16, user
// operators, top-k
// ---------------------------------------------------------------------------------

template <class T>
const char* CName() {
  if constexpr (std::is_same_v<T, int8_t>) return "signed char";
  if constexpr (std::is_same_v<T, uint8_t>) return "unsigned char";
  if constexpr (std::is_same_v<T, int16_t>) return "short";
  if constexpr (std::is_same_v<T, uint16_t>) return "unsigned short";
  if constexpr (std::is_same_v<T, int32_t>) return "int";
  if constexpr (std::is_same_v<T, uint32_t>) return "unsigned int";
  if constexpr (std::is_same_v<T, int64_t>) return "long long";
  if constexpr (std::is_same_v<T, uint64_t>) return "unsigned long long";
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  return "?";
}

// A kernel over each thread's N blocked items: `decl` declares the extra parameters, `pre` and
// `call` run between loading in[] into v[N] and storing o[N] to out[] (o starts as a copy of v).
std::string TileKernel(const std::string& tname, int items, const std::string& decl,
                       const std::string& call, const std::string& post = "") {
  const std::string N = std::to_string(items);
  return "extern \"C\" __global__ void k(const " + tname + "* in, " + tname + "* out" + decl +
         ") {\n  __shared__ __align__(16) unsigned char t0[@B0@];\n  " + kTid +
         "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N + ";\n  " + tname +
         " v[" + N + "], o[" + N + "];\n  for (int i = 0; i < " + N +
         "; ++i) o[i] = v[i] = in[base + i];\n  " + call + "\n  for (int i = 0; i < " + N +
         "; ++i) out[base + i] = o[i];\n" + post + "}\n";
}

// A kernel over each thread's N blocked keys k[] (type @T@) and values v[] (type `vname`):
// `decl` declares extra parameters, `call` sorts/selects in place; both arrays are written back.
std::string PairsKernel(const char* vname, int items, const std::string& decl,
                        const std::string& call) {
  const std::string N = std::to_string(items), V = vname;
  return "extern \"C\" __global__ void k(const @T@* kin, const " + V + "* vin, @T@* kout, " + V +
         "* vout" + decl + ") {\n  __shared__ __align__(16) unsigned char t0[@B0@];\n  " + kTid +
         "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N + ";\n  @T@ k[" + N +
         "];\n  " + V + " v[" + N + "];\n  for (int i = 0; i < " + N +
         "; ++i) { k[i] = kin[base + i]; v[i] = vin[base + i]; }\n  " + call +
         "\n  for (int i = 0; i < " + N +
         "; ++i) { kout[base + i] = k[i]; vout[base + i] = v[i]; }\n}\n";
}

// Random keys over the type's whole range (floats: [-1e6, 1e6)), and values that are each
// item's index in its tile.
template <class K, class V>
void RandomPairs(size_t n, size_t tile, std::vector<K>* keys, std::vector<V>* vals) {
  if constexpr (std::is_floating_point_v<K>) {
    *keys = Random<K>(n, -1e6, 1e6);
  } else {
    *keys =
        Random<K>(n, double(std::numeric_limits<K>::min()), double(std::numeric_limits<K>::max()));
  }
  vals->resize(n);
  for (size_t i = 0; i < n; ++i) (*vals)[i] = static_cast<V>(i % tile);
}

// Radix-sort order of a key: CUB's bit twiddling (signed: flip the sign bit; floats: flip all
// bits of negatives, the sign bit of the rest), then bits [begin, end).
template <class K>
uint64_t RadixDigit(K key, int begin, int end) {
  uint64_t u = 0;
  std::memcpy(&u, &key, sizeof(K));
  const int bits = 8 * sizeof(K);
  const uint64_t sign = uint64_t(1) << (bits - 1);
  const uint64_t all = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  if constexpr (std::is_floating_point_v<K>) {
    u = (u & sign) ? (~u & all) : (u | sign);
  } else if constexpr (std::is_signed_v<K>) {
    u ^= sign;
  }
  const int w = end - begin;
  return (u >> begin) & (w == 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1);
}

// block_radix_sort of key-value pairs in bits [begin, end): values are each item's index in its
// tile; CUB's radix sort is stable, so keys and values must match a stable CPU sort exactly.
template <class K, class V>
void CheckRadixPairs(const std::string& art, Dim block, int items, bool descending, int begin,
                     int end) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string body =
      PairsKernel(CName<V>(), items, ", int begin, int end", "@S0@(t0, k, v, begin, end);");
  CUmodule m = Build(art, body, CName<K>());
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  std::vector<K> keys;
  std::vector<V> vals;
  RandomPairs(blocks * tile, tile, &keys, &vals);
  Buf<K> dk(keys), dko(keys.size());
  Buf<V> dv(vals), dvo(vals.size());
  dko.Poison();
  dvo.Poison();
  int b_arg = begin, e_arg = end;
  Launch(m, "k", blocks, block, {&dk.ptr, &dv.ptr, &dko.ptr, &dvo.ptr, &b_arg, &e_arg});
  std::vector<K> want_k(keys.size());
  std::vector<V> want_v(keys.size());
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<size_t> idx(tile);
    for (size_t i = 0; i < tile; ++i) idx[i] = i;
    const K* kb = keys.data() + b * tile;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
      const uint64_t dx = RadixDigit(kb[x], begin, end), dy = RadixDigit(kb[y], begin, end);
      return descending ? dx > dy : dx < dy;
    });
    for (size_t i = 0; i < tile; ++i) {
      want_k[b * tile + i] = kb[idx[i]];
      want_v[b * tile + i] = static_cast<V>(idx[i]);
    }
  }
  Expect(art + ".keys", dko.Get(), want_k);
  Expect(art + ".values", dvo.Get(), want_v);
  CU(cuModuleUnload(m));
}

// block_merge_sort, keys only: `sort` (unstable: equal keys are indistinguishable here),
// `stable_sort` with a user comparator, or `sort_guarded` (per-block valid items; the rest of the
// tile becomes oob_default, which the comparator orders last).
template <class K>
void CheckMergeSort(const std::string& art, Dim block, int items, std::function<bool(K, K)> less,
                    double lo, double hi, bool guarded = false, K oob = K()) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string body = guarded ? TileKernel("@T@", items, ", const int* valid, @T@ oob",
                                                "@S0@(t0, o, valid[blockIdx.x], oob);")
                                   : TileKernel("@T@", items, "", "@S0@(t0, o);");
  CUmodule m = Build(art, body, CName<K>());
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto in = Random<K>(blocks * tile, lo, hi);
  auto valid = Random<int>(blocks, 1, double(tile));
  if (!guarded) valid.assign(blocks, int(tile));
  Buf<K> din(in), dout(in.size());
  Buf<int> dvalid(valid);
  dout.Poison();
  K oob_arg = oob;
  if (guarded) {
    Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr, &dvalid.ptr, &oob_arg});
  } else {
    Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr});
  }
  std::vector<K> want(in.size(), oob);
  std::vector<bool> in_range(in.size(), false);
  for (unsigned b = 0; b < blocks; ++b) {
    std::copy(in.begin() + b * tile, in.begin() + b * tile + valid[b], want.begin() + b * tile);
    std::stable_sort(want.begin() + b * tile, want.begin() + b * tile + valid[b], less);
    std::fill(in_range.begin() + b * tile, in_range.begin() + b * tile + valid[b], true);
  }
  const auto got = dout.Get();
  Expect(art, got, want, 0, guarded ? &in_range : nullptr);
  if (guarded) {
    // coopd documents that the rest of the tile becomes oob_default. CUB (3.0.1 and 3.3's
    // BlockMergeSort::Sort with valid_items) leaves copies of other keys there; coopd's wrapper
    // assigns oob_default itself (this check found the bug as an XFAIL first).
    size_t bad = 0, checked = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (in_range[i]) continue;
      ++checked;
      bad += got[i] != oob;
    }
    Report(art + ".oob_default", bad == 0,
           std::to_string(bad) + " of " + std::to_string(checked) +
               " items past valid_items are not oob_default");
  }
  CU(cuModuleUnload(m));
}

// block_merge_sort of pairs (unstable `sort`): keys must come out in order, and each tile's
// (key, value) pairs must be the input's (values are item indices, as V).
template <class K, class V>
void CheckMergePairs(const std::string& art, Dim block, int items, std::function<bool(K, K)> less,
                     double lo, double hi) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string body = PairsKernel(CName<V>(), items, "", "@S0@(t0, k, v);");
  CUmodule m = Build(art, body, CName<K>());
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto keys = Random<K>(blocks * tile, lo, hi);
  std::vector<V> vals(keys.size());
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<V>(i % tile);
  Buf<K> dk(keys), dko(keys.size());
  Buf<V> dv(vals), dvo(vals.size());
  dko.Poison();
  dvo.Poison();
  Launch(m, "k", blocks, block, {&dk.ptr, &dv.ptr, &dko.ptr, &dvo.ptr});
  std::vector<K> want_k(keys);
  for (unsigned b = 0; b < blocks; ++b) {
    std::stable_sort(want_k.begin() + b * tile, want_k.begin() + (b + 1) * tile, less);
  }
  Expect(art + ".keys", dko.Get(), want_k);
  const auto got_k = dko.Get();
  const auto got_v = dvo.Get();
  size_t bad = 0;
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<std::pair<K, V>> a(tile), w(tile);
    for (size_t i = 0; i < tile; ++i) {
      a[i] = {got_k[b * tile + i], got_v[b * tile + i]};
      w[i] = {keys[b * tile + i], vals[b * tile + i]};
    }
    std::sort(a.begin(), a.end());
    std::sort(w.begin(), w.end());
    bad += a != w;
  }
  Report(art + ".pairs", bad == 0,
         bad ? std::to_string(bad) + " tiles whose (key, value) pairs are not the input's"
             : std::to_string(blocks) + " tiles' pairs preserved");
  CU(cuModuleUnload(m));
}

// block_histogram `histogram` (zero, then count) into shared counters, copied out per block.
template <class T>
void CheckHistogram(const std::string& art, Dim block, int items, int bins) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string B = std::to_string(bins), N = std::to_string(items);
  const std::string body =
      "extern \"C\" __global__ void k(const @T@* in, unsigned* out) {\n"
      "  __shared__ __align__(16) unsigned char t0[@B0@];\n  __shared__ unsigned hist[" +
      B + "];\n  " + kTid + "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N +
      ";\n  @T@ v[" + N + "];\n  for (int i = 0; i < " + N +
      "; ++i) v[i] = in[base + i];\n  @S0@(t0, v, hist);\n  __syncthreads();\n"
      "  for (int i = tid; i < " +
      B + "; i += nthreads) out[(long)blockIdx.x * " + B + " + i] = hist[i];\n}\n";
  CUmodule m = Build(art, body, CName<T>());
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto in = Random<T>(blocks * tile, 0, bins - 1);
  Buf<T> din(in);
  Buf<unsigned> dout(size_t(blocks) * bins);
  dout.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr});
  std::vector<unsigned> want(dout.n, 0);
  for (unsigned b = 0; b < blocks; ++b)
    for (size_t i = 0; i < tile; ++i) ++want[size_t(b) * bins + in[b * tile + i]];
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// block_discontinuity flag_heads_with_predecessor, not_equal: flag of tile item r is
// item[r - 1] != item[r], with the block's predecessor before item 0. Few distinct values.
void CheckFlagHeads(const std::string& art, Dim block, int items) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string N = std::to_string(items);
  const std::string body =
      "extern \"C\" __global__ void k(const int* in, int* flags, const int* preds) {\n"
      "  __shared__ __align__(16) unsigned char t0[@B0@];\n  " +
      std::string(kTid) + "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N +
      ";\n  int v[" + N + "], f[" + N + "];\n  for (int i = 0; i < " + N +
      "; ++i) { v[i] = in[base + i]; f[i] = -1; }\n  @S0@(t0, v, f, preds[blockIdx.x]);\n"
      "  for (int i = 0; i < " +
      N + "; ++i) flags[base + i] = f[i];\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto in = Random<int>(blocks * tile, 0, 2);
  auto preds = Random<int>(blocks, 0, 2);
  Buf<int> din(in), dflags(in.size()), dpreds(preds);
  dflags.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dflags.ptr, &dpreds.ptr});
  std::vector<int> want(in.size());
  for (unsigned b = 0; b < blocks; ++b)
    for (size_t r = 0; r < tile; ++r)
      want[b * tile + r] = (r == 0 ? preds[b] : in[b * tile + r - 1]) != in[b * tile + r];
  Expect(art, dflags.Get(), want);
  CU(cuModuleUnload(m));
}

// block_adjacent_difference subtract_left, difference: out[r] = in[r] - in[r - 1]; the tile's
// first item is copied.
void CheckSubtractLeft(const std::string& art, Dim block, int items) {
  if (!Have(art)) return Skip(art, "artifact missing");
  CUmodule m = Build(art, TileKernel("int", items, "", "@S0@(t0, v, o);"));
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto in = Random<int>(blocks * tile, -1000000, 1000000);
  Buf<int> din(in), dout(in.size());
  dout.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr});
  std::vector<int> want(in.size());
  for (unsigned b = 0; b < blocks; ++b)
    for (size_t r = 0; r < tile; ++r)
      want[b * tile + r] = r == 0 ? in[b * tile] : in[b * tile + r] - in[b * tile + r - 1];
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// block_exchange scatter_to_striped: each block's ranks are a random permutation of its tile;
// thread t's item i must come back holding the item whose rank is i * threads + t.
void CheckScatterToStriped(const std::string& art, Dim block, int items) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string N = std::to_string(items);
  CUmodule m = Build(art, TileKernel("double", items, ", const int* ranks",
                                     "int r[" + N + "];\n  for (int i = 0; i < " + N +
                                         "; ++i) r[i] = ranks[base + i];\n  @S0@(t0, v, o, r);"));
  if (!m) return;
  const unsigned blocks = Blocks();
  const int T = static_cast<int>(block.count());
  const size_t tile = size_t(T) * items;
  auto in = Random<double>(blocks * tile, -1e9, 1e9);
  std::vector<int> ranks(in.size());
  for (unsigned b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < tile; ++i) ranks[b * tile + i] = static_cast<int>(i);
    std::shuffle(ranks.begin() + b * tile, ranks.begin() + (b + 1) * tile, rng);
  }
  Buf<double> din(in), dout(in.size());
  Buf<int> dranks(ranks);
  dout.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr, &dranks.ptr});
  std::vector<double> want(in.size());
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<double> by_rank(tile);
    for (size_t j = 0; j < tile; ++j) by_rank[ranks[b * tile + j]] = in[b * tile + j];
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < items; ++i)
        want[b * tile + size_t(t) * items + i] = by_rank[Rank(Arr::kStriped, t, i, T, items)];
  }
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// IEEE binary16 <-> float on the host (finite values; the inputs below are exact halves).
float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, e = (h >> 10) & 0x1F, mant = h & 0x3FF;
  float f;
  if (e == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
  } else if (e == 31) {
    f = mant ? NAN : INFINITY;
  } else {
    f = std::ldexp(static_cast<float>(mant | 0x400), int(e) - 25);
  }
  return sign ? -f : f;
}
uint16_t ExactFloatToHalf(float f) {  // f must be 0 or a normal half exactly
  if (f == 0) return 0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000, e = ((u >> 23) & 0xFF) - 127 + 15;
  return static_cast<uint16_t>(sign | (e << 10) | ((u >> 13) & 0x3FF));
}

// float16 block reduce (sum): inputs k/256 in [-1, 1] (exact halves), against a double sum.
// CUB adds in half precision, in its own order, so the tolerance is one unit roundoff of half
// (2^-11) times the block's sum of |x| (about 0.125 here; half's rounding at partial sums past
// 16 alone was seen to reach 2^-6 = 0.016, and a missing or doubled input of |x| > 0.125 fails).
void CheckHalfReduce(const std::string& art, Dim block, int items) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string N = std::to_string(items);
  const std::string body =
      "extern \"C\" __global__ void k(const __half* in, __half* out) {\n"
      "  __shared__ __align__(16) unsigned char t0[@B0@];\n  " +
      std::string(kTid) + "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N +
      ";\n  __half v[" + N + "];\n  for (int i = 0; i < " + N +
      "; ++i) v[i] = in[base + i];\n  __half r = @S0@(t0, v);\n"
      "  if (tid == 0) out[blockIdx.x] = r;\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto k = Random<int>(blocks * tile, -256, 256);
  std::vector<uint16_t> in(k.size());
  std::vector<float> want(blocks, 0);
  std::vector<double> abs_sum(blocks, 0);
  for (size_t i = 0; i < k.size(); ++i) {
    in[i] = ExactFloatToHalf(static_cast<float>(k[i]) / 256);
    if (HalfToFloat(in[i]) != static_cast<float>(k[i]) / 256) Die("half conversion");
  }
  for (unsigned b = 0; b < blocks; ++b) {
    double s = 0;
    for (size_t i = 0; i < tile; ++i) {
      s += k[b * tile + i] / 256.0;
      abs_sum[b] += std::abs(k[b * tile + i]) / 256.0;
    }
    want[b] = static_cast<float>(s);
  }
  Buf<uint16_t> din(in), dout(blocks);
  CU(cuMemsetD16(dout.ptr, 0x7E00, blocks));  // poison: a half NaN, never within tolerance
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr});
  const auto got_h = dout.Get();
  size_t bad = 0, first = 0;
  double worst = 0;  // largest |error| / tolerance
  for (unsigned b = 0; b < blocks; ++b) {
    const double err = std::fabs(double(HalfToFloat(got_h[b])) - want[b]);
    const double tol = std::ldexp(abs_sum[b], -11);
    if (!(err <= tol) && bad++ == 0) first = b;  // NaN (poison) fails
    worst = std::max(worst, std::isnan(err) ? INFINITY : err / tol);
  }
  char detail[256];
  std::snprintf(detail, sizeof(detail),
                "%zu of %u blocks outside 2^-11 * sum|x|; largest error/tolerance %.3f", bad,
                blocks, worst);
  if (bad) {
    std::snprintf(detail + std::strlen(detail), sizeof(detail) - std::strlen(detail),
                  "; first block %zu: got %.7g, want %.7g", first,
                  double(HalfToFloat(got_h[first])), double(want[first]));
  }
  Report(art, bad == 0, detail);
  CU(cuModuleUnload(m));
}

// The median time of `art`'s kernel over 20 launches (after 3 warm-ups), in ms, by case: the
// topk cases' timings, compared after they all ran (PrintTopKTimings).
std::map<std::string, float> topk_ms;

void TimeTopK(const std::string& art, CUmodule m, unsigned grid, Dim block,
              std::vector<void*> args) {
  CUfunction f;
  CU(cuModuleGetFunction(&f, m, "k"));
  CUevent a, b;
  CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
  std::vector<float> ms;
  for (int i = 0; i < 23; ++i) {
    CU(cuEventRecord(a, nullptr));
    CU(cuLaunchKernel(f, grid, 1, 1, block.x, block.y, block.z, 0, nullptr, args.data(), nullptr));
    CU(cuEventRecord(b, nullptr));
    CU(cuEventSynchronize(b));
    float t = 0;
    CU(cuEventElapsedTime(&t, a, b));
    if (i >= 3) ms.push_back(t);
  }
  cuEventDestroy(a);
  cuEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  topk_ms[art] = ms[ms.size() / 2];
}

// Top-k timed against a full sort of the same tiles, in this run: the same top-k spec on CCCL
// 3.5 (a radix selection honouring k) and on CCCL 3.3 (whose block_topk sorts the tile), and k = 8
// of 128 x 8 float32 tiles on CCCL 3.3, 3.5 and 3.6 against block_radix_sort's descending sort
// of those tiles: "RESULT topk <case> <ms> <baseline> <ms> <ratio>".
void PrintTopKTimings() {
  for (auto [fast, slow] : {std::pair<const char*, const char*>{"topk35_max_i32", "topk_max_i32"},
                            {"topk35_min_pairs_f32", "topk_min_pairs_f32"},
                            {"topk33_k8_max_f32", "topk_sort_desc_f32"},
                            {"topk35_k8_max_f32", "topk_sort_desc_f32"},
                            {"topk35_k8_partial_max_f32", "topk_sort_desc_f32"},
                            {"topk36_k8_max_f32", "topk_sort_desc_f32"},
                            {"topk36_k8_partial_max_f32", "topk_sort_desc_f32"}}) {
    if (!topk_ms.count(fast) || !topk_ms.count(slow)) continue;
    std::printf("RESULT topk %s %.4f %s %.4f %.3f\n", fast, topk_ms[fast], slow, topk_ms[slow],
                topk_ms[fast] / topk_ms[slow]);
  }
  std::fflush(stdout);
}

// With COOP_DUMP_DIR set, the first 64 tiles of a fixed-k top-k case go to files there for a
// check against NumPy (device/gpu_check/topk_numpy.py): <art>.keys and <art>.got (the input and
// the output, raw), <art>.nv (each tile's num_valid, int32) and <art>.meta ("dtype tile k
// blocks max ordered").
template <class K>
void DumpTopK(const std::string& art, const std::vector<K>& keys, const std::vector<K>& got,
              const std::vector<int>& nvs, size_t tile, int k, bool max, bool ordered) {
  const char* dir = std::getenv("COOP_DUMP_DIR");
  if (dir == nullptr || *dir == '\0') return;
  const size_t blocks = std::min<size_t>(64, nvs.size());
  const std::string base = std::string(dir) + "/" + art;
  auto write = [&](const std::string& path, const void* data, size_t bytes) {
    std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), bytes);
  };
  write(base + ".keys", keys.data(), blocks * tile * sizeof(K));
  write(base + ".got", got.data(), blocks * tile * sizeof(K));
  write(base + ".nv", nvs.data(), blocks * sizeof(int));
  std::ofstream(base + ".meta") << CName<K>() << " " << tile << " " << k << " " << blocks << " "
                                << (max ? 1 : 0) << " " << (ordered ? 1 : 0) << "\n";
}

// block_topk: per-block k in [1, tile]; the first k items of the tile in blocked order must be
// the k largest (max) / smallest (min) keys: in sorted order on CCCL 3.3 (which sorts the tile),
// in any order on CCCL 3.5 (`selection`: a radix selection; the first k are compared sorted).
// With pairs, each of those values must be the index of an input item with that key, all
// distinct. Items past k are not checked. `partial` (top_k.valid_items, CCCL 3.5): each block
// passes a random num_valid in [1, tile] and k in [1, num_valid]; only the tile's first
// num_valid items are candidates. `fixed_k` > 0: every block's k is that (and num_valid at least
// it). `sort`: the artifact is block_radix_sort's sort (min) or sort_descending (max) of the
// keys, the baseline a top-k is timed against; its first k are checked the same way.
template <class K, class V>
void CheckTopK(const std::string& art, Dim block, int items, bool max, bool pairs,
               bool selection = false, bool partial = false, int fixed_k = 0, bool sort = false) {
  if (!Have(art)) return Skip(art, "artifact missing (needs coopd with CCCL 3.3 or newer)");
  const std::string bits = "0, " + std::to_string(8 * sizeof(K)) + ");";
  const std::string body =
      PairsKernel(CName<V>(), items, ", const int* ks, const int* nvs",
                  sort ? "@S0@(t0, k, " + bits
                       : std::string("@S0@(t0, k, ") + (pairs ? "v, " : "") + "ks[blockIdx.x], " +
                             (partial ? "nvs[blockIdx.x], " : "") + bits);
  CUmodule m = Build(art, body, CName<K>());
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  std::vector<K> keys;
  std::vector<V> vals;
  RandomPairs(blocks * tile, tile, &keys, &vals);
  auto nvs = partial ? Random<int>(blocks, std::max(1, fixed_k), double(tile))
                     : std::vector<int>(blocks, int(tile));
  std::vector<int> ks(blocks, fixed_k);
  for (unsigned b = 0; b < blocks && fixed_k == 0; ++b)
    ks[b] = Random<int>(1, 1, double(nvs[b]))[0];
  Buf<K> dk(keys), dko(keys.size());
  Buf<V> dv(vals), dvo(vals.size());
  Buf<int> dks(ks), dnvs(nvs);
  dko.Poison();
  dvo.Poison();
  Launch(m, "k", blocks, block, {&dk.ptr, &dv.ptr, &dko.ptr, &dvo.ptr, &dks.ptr, &dnvs.ptr});
  const auto got_k = dko.Get();
  const auto got_v = dvo.Get();
  if (fixed_k > 0) DumpTopK(art, keys, got_k, nvs, tile, fixed_k, max, !selection);
  TimeTopK(art, m, blocks, block, {&dk.ptr, &dv.ptr, &dko.ptr, &dvo.ptr, &dks.ptr, &dnvs.ptr});
  std::vector<K> want_k(keys.size());
  std::vector<bool> mask(keys.size(), false);
  size_t bad_v = 0;
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<K> sorted(keys.begin() + b * tile, keys.begin() + b * tile + size_t(nvs[b]));
    if (max) {
      std::sort(sorted.begin(), sorted.end(), std::greater<K>());
    } else {
      std::sort(sorted.begin(), sorted.end());
    }
    std::vector<bool> seen(tile, false);
    for (int j = 0; j < ks[b]; ++j) {
      want_k[b * tile + j] = sorted[j];
      mask[b * tile + j] = true;
      if (pairs) {
        const V v = got_v[b * tile + j];
        const bool ok = static_cast<int64_t>(v) >= 0 && size_t(v) < size_t(nvs[b]) &&
                        !seen[size_t(v)] && keys[b * tile + size_t(v)] == got_k[b * tile + j];
        if (ok) seen[size_t(v)] = true;
        bad_v += !ok;
      }
    }
  }
  std::vector<K> first_k = got_k;
  if (selection) {  // the first k of each block, sorted as want_k is
    for (unsigned b = 0; b < blocks; ++b) {
      auto first = first_k.begin() + b * tile;
      if (max) {
        std::sort(first, first + ks[b], std::greater<K>());
      } else {
        std::sort(first, first + ks[b]);
      }
    }
  }
  Expect(art + ".keys", first_k, want_k, 0, &mask);
  if (pairs) {
    Report(art + ".values", bad_v == 0,
           bad_v ? std::to_string(bad_v) + " of the first k values do not index their key"
                 : "first k values index their keys, all distinct");
  }
  CU(cuModuleUnload(m));
}

// ---- catalogue entries covered since: run-length decode, radix rank, warp load/store/exchange,
// partial and segmented reductions, prefix-callback scans, user types
// ---------------------------------------------------------------------------------

// The value the poisoned integer buffers hold (Buf::Poison): what an unwritten output keeps.
template <class T>
T PoisonValue() {
  T v;
  std::memset(&v, 0xA5, sizeof(T));
  return v;
}

// block_run_length_decode decode: 64 threads x 2 runs (lengths 1..6, each block's last 0..16
// runs of length 0), decoded in windows of 64 x 4 items: the first call returns the total
// decoded size, further windows follow at offsets 256, 512, ... Decoded items past the total are
// not written; the rest of each block's output keeps its poison.
void CheckRunLengthDecode(const std::string& art, Dim block, int runs, int decoded) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string R = std::to_string(runs), D = std::to_string(decoded);
  const int T = static_cast<int>(block.count());
  const int nruns = T * runs, window = T * decoded, cap = nruns * 6;
  const std::string body =
      "extern \"C\" __global__ void k(const int* vals, const unsigned* lens, int* out, "
      "unsigned* totals) {\n  __shared__ __align__(16) unsigned char t0[@B0@];\n  " +
      std::string(kTid) + "  const long rb = ((long)blockIdx.x * nthreads + tid) * " + R +
      ";\n  int rv[" + R + "];\n  unsigned rl[" + R + "];\n  for (int i = 0; i < " + R +
      "; ++i) { rv[i] = vals[rb + i]; rl[i] = lens[rb + i]; }\n  int d[" + D +
      "];\n  const unsigned total = @S0@(t0, rv, rl, d, 0);\n"
      "  if (tid == 0) totals[blockIdx.x] = total;\n"
      "  for (unsigned off = 0; off < total; off += " +
      std::to_string(window) +
      ") {\n    if (off) { __syncthreads(); @S0@(t0, rv, rl, d, off); }\n"
      "    for (int i = 0; i < " +
      D + "; ++i) {\n      const unsigned j = off + tid * " + D +
      " + i;\n      if (j < total) out[(long)blockIdx.x * " + std::to_string(cap) +
      " + j] = d[i];\n    }\n  }\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  auto vals = Random<int>(size_t(blocks) * nruns, -1e9, 1e9);
  auto lens = Random<unsigned>(vals.size(), 1, 6);
  auto zeros = Random<int>(blocks, 0, 16);
  for (unsigned b = 0; b < blocks; ++b)
    for (int r = nruns - zeros[b]; r < nruns; ++r) lens[size_t(b) * nruns + r] = 0;
  Buf<int> dvals(vals), dout(size_t(blocks) * cap);
  Buf<unsigned> dlens(lens), dtotals(blocks);
  dout.Poison();
  dtotals.Poison();
  Launch(m, "k", blocks, block, {&dvals.ptr, &dlens.ptr, &dout.ptr, &dtotals.ptr});
  std::vector<int> want(dout.n, PoisonValue<int>());
  std::vector<unsigned> want_totals(blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    size_t j = size_t(b) * cap;
    for (int r = 0; r < nruns; ++r)
      for (unsigned n = 0; n < lens[size_t(b) * nruns + r]; ++n)
        want[j++] = vals[size_t(b) * nruns + r];
    want_totals[b] = static_cast<unsigned>(j - size_t(b) * cap);
  }
  Expect(art + ".total", dtotals.Get(), want_totals);
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// block_radix_rank rank_keys: ranks[i] of blocked key i is its position in the tile stably
// sorted by bits [begin, begin + bits).
void CheckRadixRank(const std::string& art, Dim block, int items, int bits, int begin) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string N = std::to_string(items);
  const std::string body =
      "extern \"C\" __global__ void k(const unsigned* in, int* out, int begin) {\n"
      "  __shared__ __align__(16) unsigned char t0[@B0@];\n  " +
      std::string(kTid) + "  const long base = ((long)blockIdx.x * nthreads + tid) * " + N +
      ";\n  unsigned v[" + N + "];\n  int r[" + N + "];\n  for (int i = 0; i < " + N +
      "; ++i) v[i] = in[base + i];\n  @S0@(t0, v, r, begin);\n  for (int i = 0; i < " + N +
      "; ++i) out[base + i] = r[i];\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto in = Random<unsigned>(blocks * tile, 0, 4294967295.0);
  Buf<unsigned> din(in);
  Buf<int> dout(in.size());
  dout.Poison();
  int begin_arg = begin;
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr, &begin_arg});
  std::vector<int> want(in.size());
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<size_t> idx(tile);
    for (size_t i = 0; i < tile; ++i) idx[i] = i;
    const unsigned* kb = in.data() + b * tile;
    auto digit = [&](size_t i) { return (kb[i] >> begin) & ((1u << bits) - 1); };
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t x, size_t y) { return digit(x) < digit(y); });
    for (size_t p = 0; p < tile; ++p) want[b * tile + idx[p]] = static_cast<int>(p);
  }
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// warp_load + warp_store (transpose), logical warps of `lanes` in 128-thread blocks, `items` int32
// each: load, load_guarded_default (per-warp valid items, default -7), store of the loaded
// items, store_guarded of them (the rest of the output keeps its poison).
void CheckWarpLoadStore(const std::string& art, int lanes, int items) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string L = std::to_string(lanes), W = std::to_string(128 / lanes),
                    N = std::to_string(items), WT = std::to_string(lanes * items);
  std::string body =
      "extern \"C\" __global__ void k(const int* in, int* o_load, int* o_gd, "
      "int* o_store, int* o_sg, const int* valid, int oob) {\n";
  for (int p = 0; p < 4; ++p) {
    body += "  __shared__ __align__(16) unsigned char t" + std::to_string(p) + "[" + W + "][@B" +
            std::to_string(p) + "@];\n";
  }
  body += "  const int w = threadIdx.x / " + L + ", lane = threadIdx.x % " + L +
          ";\n  const long g = (long)blockIdx.x * " + W + " + w, base = g * " + WT + ";\n  int a[" +
          N + "], b[" + N +
          "];\n  @S0@(t0[w], in + base, a);\n"
          "  @S1@(t1[w], in + base, b, valid[g], oob);\n  for (int i = 0; i < " +
          N + "; ++i) { o_load[base + lane * " + N + " + i] = a[i]; o_gd[base + lane * " + N +
          " + i] = b[i]; }\n  @S2@(t2[w], o_store + base, a);\n"
          "  @S3@(t3[w], o_sg + base, a, valid[g]);\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t wt = size_t(lanes) * items, warps = size_t(blocks) * (128 / lanes);
  auto in = Random<int>(warps * wt, -1e9, 1e9);
  auto valid = Random<int>(warps, 0, double(wt));
  Buf<int> din(in), dload(in.size()), dgd(in.size()), dstore(in.size()), dsg(in.size());
  Buf<int> dvalid(valid);
  for (Buf<int>* b : {&dload, &dgd, &dstore, &dsg}) b->Poison();
  int oob = -7;
  Launch(m, "k", blocks, {128},
         {&din.ptr, &dload.ptr, &dgd.ptr, &dstore.ptr, &dsg.ptr, &dvalid.ptr, &oob});
  std::vector<int> want_gd(in), want_sg(in);
  for (size_t g = 0; g < warps; ++g)
    for (size_t j = valid[g]; j < wt; ++j) {
      want_gd[g * wt + j] = oob;
      want_sg[g * wt + j] = PoisonValue<int>();
    }
  Expect(art + ".load", dload.Get(), in);
  Expect(art + ".load_guarded_default", dgd.Get(), want_gd);
  Expect(art + ".store", dstore.Get(), in);
  Expect(art + ".store_guarded", dsg.Get(), want_sg);
  CU(cuModuleUnload(m));
}

// warp_exchange blocked_to_striped, logical warps of `lanes` in 128-thread blocks: lane l's item
// i must come back holding the warp tile's item i * lanes + l.
void CheckWarpExchange(const std::string& art, int lanes, int items) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string L = std::to_string(lanes), W = std::to_string(128 / lanes),
                    N = std::to_string(items);
  const std::string body =
      "extern \"C\" __global__ void k(const double* in, double* out) {\n"
      "  __shared__ __align__(16) unsigned char t0[" +
      W + "][@B0@];\n  const int w = threadIdx.x / " + L +
      ";\n  const long base = ((long)blockIdx.x * 128 + threadIdx.x) * " + N + ";\n  double v[" +
      N + "], o[" + N + "];\n  for (int i = 0; i < " + N +
      "; ++i) v[i] = in[base + i];\n  @S0@(t0[w], v, o);\n  for (int i = 0; i < " + N +
      "; ++i) out[base + i] = o[i];\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t wt = size_t(lanes) * items;
  auto in = Random<double>(size_t(blocks) * 128 * items, -1e9, 1e9);
  Buf<double> din(in), dout(in.size());
  dout.Poison();
  Launch(m, "k", blocks, {128}, {&din.ptr, &dout.ptr});
  std::vector<double> want(in.size());
  for (size_t g = 0; g < in.size() / wt; ++g)
    for (int l = 0; l < lanes; ++l)
      for (int i = 0; i < items; ++i) want[g * wt + l * items + i] = in[g * wt + i * lanes + l];
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// block_reduce sum_partial (1 item per thread): per-block num_valid in [1, threads]; thread 0
// writes.
void CheckBlockSumPartial(const std::string& art, Dim block) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string body =
      "extern \"C\" __global__ void k(const int* in, int* out, const int* valid) {\n"
      "  __shared__ __align__(16) unsigned char t0[@B0@];\n  " +
      std::string(kTid) +
      "  const int r = @S0@(t0, in[(long)blockIdx.x * nthreads + tid], valid[blockIdx.x]);\n"
      "  if (tid == 0) out[blockIdx.x] = r;\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const int T = static_cast<int>(block.count());
  auto in = Random<int>(size_t(blocks) * T, -1e6, 1e6);
  auto valid = Random<int>(blocks, 1, T);
  Buf<int> din(in), dout(blocks), dvalid(valid);
  dout.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr, &dvalid.ptr});
  std::vector<int> want(blocks, 0);
  for (unsigned b = 0; b < blocks; ++b)
    for (int t = 0; t < valid[b]; ++t) want[b] += in[size_t(b) * T + t];
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// warp_reduce sum_partial: per-logical-warp num_valid in [1, lanes]; lane 0 writes.
void CheckWarpSumPartial(const std::string& art, int lanes) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string L = std::to_string(lanes), W = std::to_string(128 / lanes);
  const std::string body =
      "extern \"C\" __global__ void k(const long long* in, long long* out, const int* valid) {\n"
      "  __shared__ __align__(16) unsigned char t0[" +
      W + "][@B0@];\n  const int w = threadIdx.x / " + L +
      ";\n  const long g = (long)blockIdx.x * " + W +
      " + w;\n  const long long r = @S0@(t0[w], in[(long)blockIdx.x * 128 + threadIdx.x], "
      "valid[g]);\n  if (threadIdx.x % " +
      L + " == 0) out[g] = r;\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  const size_t warps = size_t(blocks) * (128 / lanes);
  auto in = Random<long long>(warps * lanes, -1e15, 1e15);
  auto valid = Random<int>(warps, 1, lanes);
  Buf<long long> din(in), dout(warps);
  Buf<int> dvalid(valid);
  dout.Poison();
  Launch(m, "k", blocks, {128}, {&din.ptr, &dout.ptr, &dvalid.ptr});
  std::vector<long long> want(warps, 0);
  for (size_t g = 0; g < warps; ++g)
    for (int l = 0; l < valid[g]; ++l) want[g] += in[g * lanes + l];
  Expect(art, dout.Get(), want);
  CU(cuModuleUnload(m));
}

// warp_reduce head_segmented_sum, logical warps of `lanes`: flags set with probability 1/4 (and
// always in lane 0); each head lane must hold the sum of its segment (up to the next head or the
// end of the logical warp). Other lanes are not checked.
void CheckWarpHeadSegSum(const std::string& art, int lanes) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string L = std::to_string(lanes), W = std::to_string(128 / lanes);
  const std::string body =
      "extern \"C\" __global__ void k(const int* in, const int* flags, int* out) {\n"
      "  __shared__ __align__(16) unsigned char t0[" +
      W +
      "][@B0@];\n  const long i = (long)blockIdx.x * 128 + threadIdx.x;\n"
      "  out[i] = @S0@(t0[threadIdx.x / " +
      L + "], in[i], flags[i]);\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  auto in = Random<int>(size_t(blocks) * 128, -1e6, 1e6);
  auto flags = Random<int>(in.size(), 0, 3);
  for (size_t i = 0; i < flags.size(); ++i) flags[i] = i % lanes == 0 || flags[i] == 0;
  Buf<int> din(in), dflags(flags), dout(in.size());
  dout.Poison();
  Launch(m, "k", blocks, {128}, {&din.ptr, &dflags.ptr, &dout.ptr});
  std::vector<int> want(in.size(), 0);
  std::vector<bool> mask(in.size(), false);
  for (size_t i = 0; i < in.size(); ++i) {
    if (!flags[i]) continue;
    mask[i] = true;
    size_t j = i;
    do want[i] += in[j++];
    while (j % lanes != 0 && !flags[j]);
  }
  Expect(art, dout.Get(), want, 0, &mask);
  CU(cuModuleUnload(m));
}

// block_scan exclusive_sum_prefix over `tiles` consecutive tiles per block, seeded by a per-block
// initial total: with the built-in running prefix (an int per thread; thread 0's final total is
// written out) or a user callback (`callback`: its state is that int). Output: each block's
// exclusive prefix sums across all its tiles, plus the initial total.
void CheckScanPrefix(const std::string& art, Dim block, int items, int tiles, bool callback) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string N = std::to_string(items);
  const int T = static_cast<int>(block.count());
  const size_t tile = size_t(T) * items, seg = tile * tiles;
  const std::string body =
      "extern \"C\" __global__ void k(const int* in, int* out, const int* init, int* totals) {\n"
      "  __shared__ __align__(16) unsigned char t0[@B0@];\n  " +
      std::string(kTid) + "  int run = init[blockIdx.x];\n  for (int t = 0; t < " +
      std::to_string(tiles) + "; ++t) {\n    const long base = (long)blockIdx.x * " +
      std::to_string(seg) + " + t * " + std::to_string(tile) + " + tid * " + N + ";\n    int v[" +
      N + "], o[" + N + "];\n    for (int i = 0; i < " + N +
      "; ++i) v[i] = in[base + i];\n    if (t) __syncthreads();\n    @S0@(t0, v, o, " +
      (callback ? "(void*)&run" : "&run") + ");\n    for (int i = 0; i < " + N +
      "; ++i) out[base + i] = o[i];\n  }\n  if (tid == 0) totals[blockIdx.x] = run;\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  const unsigned blocks = Blocks();
  auto in = Random<int>(blocks * seg, 0, 100);
  auto init = Random<int>(blocks, -1e6, 1e6);
  Buf<int> din(in), dout(in.size()), dinit(init), dtotals(blocks);
  dout.Poison();
  dtotals.Poison();
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr, &dinit.ptr, &dtotals.ptr});
  std::vector<int> want(in.size()), want_totals(blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    int s = init[b];
    for (size_t i = 0; i < seg; ++i) {
      want[b * seg + i] = s;
      s += in[b * seg + i];
    }
    want_totals[b] = s;
  }
  Expect(art, dout.Get(), want);
  Expect(art + ".running_total", dtotals.Get(), want_totals);
  CU(cuModuleUnload(m));
}

// User type (12 bytes, align 4): block_load warp_transpose -> block_merge_sort stable_sort by a
// user comparator given as source (key_less: by the first int) -> block_store warp_transpose.
// Keys are few (0..50) so stability shows; the tag is each record's index in its tile.
struct Rec {
  int key;
  float value;
  int tag;
};
void CheckUserTypeSort(const std::string& art, Dim block, int items) {
  if (!Have(art)) return Skip(art, "artifact missing");
  const std::string N = std::to_string(items);
  const std::string body =
      "extern \"C\" __global__ void k(const coop_user_12_4* in, coop_user_12_4* out) {\n"
      "  __shared__ __align__(16) unsigned char t0[@B0@];\n"
      "  __shared__ __align__(16) unsigned char t1[@B1@];\n"
      "  __shared__ __align__(16) unsigned char t2[@B2@];\n  " +
      std::string(kTid) + "  const long base = (long)blockIdx.x * nthreads * " + N +
      ";\n  coop_user_12_4 v[" + N +
      "];\n  @S0@(t0, in + base, v);\n  @S1@(t1, v);\n  @S2@(t2, out + base, v);\n}\n";
  CUmodule m = Build(art, body);
  if (!m) return;
  static_assert(sizeof(Rec) == 12 && alignof(Rec) == 4);
  const unsigned blocks = Blocks();
  const size_t tile = size_t(block.count()) * items;
  auto keys = Random<int>(blocks * tile, 0, 50);
  auto values = Random<float>(keys.size(), -1, 1);
  std::vector<Rec> in(keys.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = {keys[i], values[i], int(i % tile)};
  Buf<Rec> din(in), dout(in.size());
  CU(cuMemsetD8(dout.ptr, 0xA5, dout.n * sizeof(Rec)));
  Launch(m, "k", blocks, block, {&din.ptr, &dout.ptr});
  std::vector<Rec> want(in);
  for (unsigned b = 0; b < blocks; ++b) {
    std::stable_sort(want.begin() + b * tile, want.begin() + (b + 1) * tile,
                     [](const Rec& x, const Rec& y) { return x.key < y.key; });
  }
  const auto got = dout.Get();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(Rec)) != 0 && bad++ == 0) first = i;
  }
  char detail[256];
  if (bad) {
    std::snprintf(detail, sizeof(detail),
                  "%zu of %zu records wrong; first at %zu: got (key %d, tag %d), want (key %d, "
                  "tag %d)",
                  bad, got.size(), first, got[first].key, got[first].tag, want[first].key,
                  want[first].tag);
  } else {
    std::snprintf(detail, sizeof(detail), "%zu records (stable by key, bytes exact)", got.size());
  }
  Report(art, bad == 0, detail);
  CU(cuModuleUnload(m));
}

void RunChecks() {
  using std::function;
  auto sum = [](auto a, auto b) { return a + b; };
  auto mx = [](auto a, auto b) { return a > b ? a : b; };
  auto mn = [](auto a, auto b) { return a < b ? a : b; };
  // block_reduce
  CheckBlockReduce<float>("reduce_sum_f32", {256}, 1, "@S0@", sum, -1, 1, 1e-4);
  CheckBlockReduce<int>("reduce_max_i32_2d", {16, 16}, 4, "@S0@", mx, -1e6, 1e6, 0);
  CheckBlockReduce<unsigned>(
      "reduce_xor_u32_3d", {8, 4, 2}, 2, "@S0@", [](unsigned a, unsigned b) { return a ^ b; }, 0,
      4e9, 0);
  CheckBlockReduce<double>("reduce_min_f64", {96}, 3, "@S0@", mn, -1e3, 1e3, 0);
  // block_scan
  CheckBlockScan<int>("scan_exsum_i32", "int", {128}, 4, true, false, true, sum, 0, 0, 100);
  CheckBlockScan<long long>("scan_max_i64", "long long", {64}, 1, false, false, false, mx,
                            std::numeric_limits<long long>::min(), -1e12, 1e12);
  CheckBlockScan<unsigned>("scan_incsum_u32_80", "unsigned int", {80}, 3, false, false, false, sum,
                           0u, 0, 4e9);
  CheckBlockScan<int>("scan_exmax_i32_2d", "int", {32, 4}, 2, true, true, true, mx,
                      std::numeric_limits<int>::min(), -1e6, 1e6);
  // block_load / block_store
  for (const char* alg : {"direct", "striped", "vectorize", "transpose", "warp_transpose",
                          "warp_transpose_timesliced"}) {
    CheckLoadStore(alg);
  }
  CheckTilePipeline();
  CheckExchange();
  CheckShuffle();
  // warp_reduce / warp_scan
  CheckWarpReduce<double>("warp_sum_f64", "double", 16, sum, -1, 1, 1e-12);
  CheckWarpReduce<int>("warp_max_i32", "int", 32, mx, -1e9, 1e9, 0);
  CheckWarpReduce<unsigned long long>(
      "warp_or_u64", "unsigned long long", 4,
      [](unsigned long long a, unsigned long long b) { return a | b; }, 0, 9e18, 0);
  CheckWarpScan<int>("warp_incsum_i32", "int", 8, false, false, false, sum, 0, -50, 50);
  CheckWarpScan<unsigned>("warp_exsum_u32", "unsigned int", 32, true, false, true, sum, 0u, 0, 4e9);
  CheckWarpScan<long long>("warp_exmax_i64", "long long", 16, true, true, false, mx,
                           std::numeric_limits<long long>::min(), -1e15, 1e15);
  // block_radix_sort, once coopd has it
  CheckRadixSort<uint32_t>("radix_sort_u32", "unsigned int", {128}, 4, false);
  CheckRadixSort<int32_t>("radix_sort_desc_i32", "int", {64, 2}, 3, true);
  CheckRadixPairs<uint32_t, int32_t>("radix_pairs_bits_u32", {128}, 4, false, 4, 12);
  CheckRadixPairs<float, int64_t>("radix_pairs_desc_f32_2d", {32, 4}, 3, true, 0, 32);
  // block_merge_sort
  CheckMergeSort<int32_t>("merge_sort_i32_2d", {32, 4}, 3, std::less<int32_t>(), -1e9, 1e9);
  CheckMergePairs<float, double>("merge_pairs_f32", {64}, 4, std::greater<float>(), -1e3, 1e3);
  CheckMergeSort<uint16_t>("merge_guarded_u16", {128}, 2, std::less<uint16_t>(), 0, 65534, true,
                           uint16_t(65535));
  CheckMergeSort<int32_t>(
      "merge_user_cmp", {128}, 4, [](int32_t a, int32_t b) { return std::abs(a) < std::abs(b); },
      -1000, 1000);
  // block_histogram, block_discontinuity, block_adjacent_difference, block_exchange scatter
  CheckHistogram<uint8_t>("histo_sort_u8", {128}, 4, 64);
  CheckHistogram<uint16_t>("histo_atomic_u16_2d", {16, 8}, 3, 300);
  CheckFlagHeads("discont_heads_pred_2d", {16, 8}, 2);
  CheckSubtractLeft("adjdiff_left_i32", {128}, 4);
  CheckScatterToStriped("exchange_scatter_striped_f64", {64}, 4);
  // float16
  CheckHalfReduce("reduce_sum_f16", {128}, 4);
  // user operators: clamp_add (min(a + b, 10000), on non-negative ints) as source and as LTO-IR,
  // a stateful one (the clamp read from its state)
  auto clamp = [](int a, int b) { return std::min(a + b, 10000); };
  CheckBlockReduce<int>("op_src_reduce_2d", {16, 8}, 4, "@S0@", clamp, 0, 100, 0);
  CheckBlockScan<int>("op_src_scan", "int", {128}, 4, false, false, false, clamp, 0, 0, 100);
  CheckBlockReduce<int>("op_lto_reduce_2d", {16, 8}, 4, "@S0@", clamp, 0, 100, 0);
  CheckBlockScan<int>("op_lto_scan", "int", {128}, 4, false, false, false, clamp, 0, 0, 100);
  const int limit = 7000;
  CheckBlockReduce<int>(
      "op_stateful_reduce", {128}, 2, "@S0@", [](int a, int b) { return std::min(a + b, 7000); }, 0,
      100, 0, &limit);
  // block_topk: CCCL 3.3 (a sort of the tile), CCCL 3.5 (a radix selection honouring k)
  CheckTopK<int32_t, int32_t>("topk_max_i32", {128}, 4, true, false);
  CheckTopK<float, uint32_t>("topk_min_pairs_f32", {64}, 8, false, true);
  CheckTopK<int32_t, int32_t>("topk35_max_i32", {128}, 4, true, false, true);
  CheckTopK<float, uint32_t>("topk35_min_pairs_f32", {64}, 8, false, true, true);
  CheckTopK<float, uint32_t>("topk35_max_pairs_f32", {256}, 8, true, true, true);
  CheckTopK<int32_t, int32_t>("topk35_partial_min_i32", {128}, 4, false, false, true, true);
  CheckTopK<float, uint32_t>("topk35_partial_max_pairs_f32", {64}, 8, true, true, true, true);
  // k = 8 of 128 x 8 float32 tiles, full and partial, on CCCL 3.3, 3.5 and 3.6 (one coopd serving
  // all three), and block_radix_sort's descending sort of the same tiles (toolkit CCCL) as the
  // baseline they are timed against.
  CheckTopK<float, uint32_t>("topk_sort_desc_f32", {128}, 8, true, false, false, false, 8, true);
  CheckTopK<float, uint32_t>("topk33_k8_max_f32", {128}, 8, true, false, false, false, 8);
  CheckTopK<float, uint32_t>("topk35_k8_max_f32", {128}, 8, true, false, true, false, 8);
  CheckTopK<float, uint32_t>("topk35_k8_partial_max_f32", {128}, 8, true, false, true, true, 8);
  CheckTopK<float, uint32_t>("topk36_k8_max_f32", {128}, 8, true, false, true, false, 8);
  CheckTopK<float, uint32_t>("topk36_k8_partial_max_f32", {128}, 8, true, false, true, true, 8);
  PrintTopKTimings();
  // run-length decode, radix rank, warp load/store/exchange, partial and segmented
  // reductions, prefix-callback scans, user types
  CheckRunLengthDecode("rld_decode_i32", {64}, 2, 4);
  CheckRadixRank("radix_rank_u32", {128}, 4, 5, 7);
  CheckWarpLoadStore("warp_ls_transpose_i32", 16, 4);
  CheckWarpExchange("warp_exchange_b2s_f64", 8, 3);
  CheckBlockSumPartial("reduce_sum_partial_i32", {96});
  CheckWarpHeadSegSum("warp_headseg_sum_i32", 32);
  CheckWarpSumPartial("warp_sum_partial_i64", 8);
  CheckScanPrefix("scan_exsum_prefix_i32", {128}, 4, 5, false);
  CheckScanPrefix("scan_exsum_prefix_cb", {128}, 4, 5, true);
  CheckUserTypeSort("user_sort_pipeline", {128}, 4);
}

// ---- speed -------------------------------------------------------------------------------------

// Fresh pseudo-random data on the device (a hash of index and seed): ints in [0, mask], floats
// in [-1, 1).
__global__ void FillRandom(unsigned* p, size_t n, unsigned long long seed, unsigned mask,
                           bool as_float) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    const unsigned v = static_cast<unsigned>(x >> 32);
    p[i] = as_float ? __float_as_uint(static_cast<float>(v) * (2.0f / 4294967296.0f) - 1.0f)
                    : (v & mask);
  }
}

struct Timer {
  Timer() {
    CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
  }
  ~Timer() {
    cuEventDestroy(a);
    cuEventDestroy(b);
  }
  template <class F>
  float Time(F&& f) {
    CU(cuEventRecord(a, nullptr));
    f();
    CU(cuEventRecord(b, nullptr));
    CU(cuEventSynchronize(b));
    float ms = 0;
    CU(cuEventElapsedTime(&ms, a, b));
    return ms;
  }
  CUevent a, b;
};

float Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void LaunchF(CUfunction f, unsigned grid, unsigned block, std::vector<void*> args) {
  CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args.data(), nullptr));
}

CUfunction Native(const void* kernel) {
  cudaFunction_t f;
  CUDART(cudaGetFuncBySymbol(&f, kernel));
  return reinterpret_cast<CUfunction>(f);
}

// Times linked and native launches of the same kernel, interleaved, and prints the RESULT line.
void Compare(const char* name, CUfunction linked, CUfunction native, unsigned grid, unsigned block,
             std::vector<void*> args, double bytes) {
  Timer t;
  for (int i = 0; i < 3; ++i) {  // warm-up
    LaunchF(linked, grid, block, args);
    LaunchF(native, grid, block, args);
  }
  CU(cuCtxSynchronize());
  std::vector<float> tl, tn;
  for (int i = 0; i < opt.reps; ++i) {
    tl.push_back(t.Time([&] { LaunchF(linked, grid, block, args); }));
    tn.push_back(t.Time([&] { LaunchF(native, grid, block, args); }));
  }
  const double ml = Median(tl), mn = Median(tn);
  std::printf("RESULT bench %-8s %.4f %.4f %.4f %.0f %.0f %.0f\n", name, ml, mn, ml / mn,
              bytes / ml / 1e6, bytes / mn / 1e6, bytes);
  std::fflush(stdout);
}

std::string Defines(const std::string& art, std::vector<std::string> names) {
  std::string d;
  const auto& parts = manifest.at(art);
  for (size_t i = 0; i < names.size(); ++i) {
    d += "#define COOP_" + names[i] + "_SYM " + parts[i].symbol + "\n#define COOP_" + names[i] +
         "_BYTES " + parts[i].bytes + "\n";
  }
  return d;
}

void RunBench() {
  for (const char* a : {"bench_reduce", "bench_scan", "bench_copy"}) {
    if (!Have(a)) Die(std::string("bench artifact missing: ") + a);
  }
  const bool sort = Have("bench_sort");
  // One NVRTC program with every linked bench kernel; the artifacts are bundled per kernel, so
  // each is declared from its own header and linked as its own LTO-IR module.
  std::string prefix = "#define COOP_LINKED 1\n" + Defines("bench_reduce", {"REDUCE"}) +
                       Defines("bench_scan", {"SCAN_LOAD", "SCAN", "SCAN_STORE"}) +
                       Defines("bench_copy", {"COPY_LOAD", "COPY_STORE"});
  std::string decls = Read(opt.dir + "/bench_scan.h") + Read(opt.dir + "/bench_copy.h");
  if (sort) {
    prefix += Defines("bench_sort", {"SORT"});
    decls += Read(opt.dir + "/bench_sort.h");
  }
  std::vector<std::string> arts = {"bench_reduce", "bench_scan", "bench_copy"};
  if (sort) arts.push_back("bench_sort");
  CUmodule m = CompileAndLink(
      "bench", Read(opt.dir + "/bench_reduce.h") + decls + prefix + Read(opt.kernels), arts);
  if (opt.link_only) return;
  auto fn = [&](const char* name) {
    CUfunction f;
    CU(cuModuleGetFunction(&f, m, name));
    return f;
  };

  // Sizes: the reduce reads 1 GiB, the others read 512 MiB and write 512 MiB (L2 is ~60 MB).
  const size_t reduce_n = size_t(1) << 28, n = size_t(1) << 27;
  Buf<float> rin(reduce_n);
  Buf<unsigned> in(n), out(n);
  const unsigned long long seed = opt.seed;
  FillRandom<<<4096, 256>>>(reinterpret_cast<unsigned*>(rin.ptr), reduce_n, seed, 0, true);
  CUDART(cudaGetLastError());
  FillRandom<<<4096, 256>>>(reinterpret_cast<unsigned*>(in.ptr), n, seed * 3 + 1, 15, false);
  CUDART(cudaGetLastError());
  CUDART(cudaDeviceSynchronize());

  Timer t;
  {  // device-to-device copy of the 1 GiB buffer, counting bytes read + written
    Buf<float> dst(reduce_n);
    for (int i = 0; i < 3; ++i) CU(cuMemcpyDtoD(dst.ptr, rin.ptr, reduce_n * 4));
    std::vector<float> v;
    for (int i = 0; i < opt.reps; ++i) {
      v.push_back(t.Time([&] { CU(cuMemcpyDtoDAsync(dst.ptr, rin.ptr, reduce_n * 4, nullptr)); }));
    }
    const double ms = Median(v);
    std::printf("RESULT copy %.4f %.0f\n", ms, 2.0 * reduce_n * 4 / ms / 1e6);
  }

  const unsigned rgrid = reduce_n / (BENCH_REDUCE_THREADS * BENCH_REDUCE_ITEMS);
  {
    Buf<float> rout(rgrid);
    rout.Poison();
    Compare("reduce", fn("bench_reduce"), Native((const void*)bench_reduce), rgrid,
            BENCH_REDUCE_THREADS, {&rin.ptr, &rout.ptr}, reduce_n * 4.0 + rgrid * 4.0);
    // The result must be right, too: per-tile sums against a double reference.
    auto x = rin.Get();
    std::vector<float> want(rgrid);
    const size_t tile = BENCH_REDUCE_THREADS * BENCH_REDUCE_ITEMS;
    for (unsigned b = 0; b < rgrid; ++b) {
      double s = 0;
      for (size_t i = 0; i < tile; ++i) s += x[b * tile + i];
      want[b] = static_cast<float>(s);
    }
    rout.Poison();
    LaunchF(fn("bench_reduce"), rgrid, BENCH_REDUCE_THREADS, {&rin.ptr, &rout.ptr});
    CU(cuCtxSynchronize());
    Expect("bench.reduce", rout.Get(), want, 1e-4);

    // cub::DeviceReduce::Sum over the same 1 GiB, the library a user would otherwise pick.
    Buf<float> sum(1);
    size_t temp_bytes = 0;
    const float* rin_p = reinterpret_cast<const float*>(rin.ptr);
    float* sum_p = reinterpret_cast<float*>(sum.ptr);
    CUDART(cub::DeviceReduce::Sum(nullptr, temp_bytes, rin_p, sum_p, reduce_n));
    Buf<unsigned char> temp(temp_bytes);
    void* temp_p = reinterpret_cast<void*>(temp.ptr);
    for (int i = 0; i < 3; ++i) {
      CUDART(cub::DeviceReduce::Sum(temp_p, temp_bytes, rin_p, sum_p, reduce_n));
    }
    std::vector<float> v;
    for (int i = 0; i < opt.reps; ++i) {
      v.push_back(t.Time(
          [&] { CUDART(cub::DeviceReduce::Sum(temp_p, temp_bytes, rin_p, sum_p, reduce_n)); }));
    }
    const double ms = Median(v);
    std::printf("RESULT devreduce %.4f %.0f\n", ms, reduce_n * 4.0 / ms / 1e6);
    double total = 0;
    for (float w : want) total += w;
    Expect("bench.device_reduce", sum.Get(), std::vector<float>{static_cast<float>(total)}, 1e-3);
  }

  auto check_tiles = [&](const char* name, CUfunction f, unsigned grid, unsigned block, size_t tile,
                         auto ref) {
    out.Poison();
    LaunchF(f, grid, block, {&in.ptr, &out.ptr});
    CU(cuCtxSynchronize());
    auto x = in.Get();
    std::vector<unsigned> want(x);
    for (size_t b = 0; b < n / tile; ++b) ref(x.data() + b * tile, want.data() + b * tile, tile);
    Expect(name, out.Get(), want);
  };
  {
    const unsigned grid = n / (BENCH_SCAN_THREADS * BENCH_SCAN_ITEMS);
    Compare("scan", fn("bench_scan"), Native((const void*)bench_scan), grid, BENCH_SCAN_THREADS,
            {&in.ptr, &out.ptr}, n * 8.0);
    check_tiles("bench.scan", fn("bench_scan"), grid, BENCH_SCAN_THREADS,
                BENCH_SCAN_THREADS * BENCH_SCAN_ITEMS,
                [](const unsigned* a, unsigned* w, size_t len) {
                  unsigned s = 0;
                  for (size_t i = 0; i < len; ++i) w[i] = s, s += a[i];
                });
  }
  {
    const unsigned grid = n / (BENCH_COPY_THREADS * BENCH_COPY_ITEMS);
    Compare("loadstore", fn("bench_copy"), Native((const void*)bench_copy), grid,
            BENCH_COPY_THREADS, {&in.ptr, &out.ptr}, n * 8.0);
    check_tiles("bench.loadstore", fn("bench_copy"), grid, BENCH_COPY_THREADS,
                BENCH_COPY_THREADS * BENCH_COPY_ITEMS, [](const unsigned*, unsigned*, size_t) {});
  }
  if (sort) {
    FillRandom<<<4096, 256>>>(reinterpret_cast<unsigned*>(in.ptr), n, seed * 5 + 2, ~0u, false);
    CUDART(cudaGetLastError());
    const unsigned grid = n / (BENCH_SORT_THREADS * BENCH_SORT_ITEMS);
    Compare("sort", fn("bench_sort"), Native((const void*)bench_sort), grid, BENCH_SORT_THREADS,
            {&in.ptr, &out.ptr}, n * 8.0);
    check_tiles("bench.sort", fn("bench_sort"), grid, BENCH_SORT_THREADS,
                BENCH_SORT_THREADS * BENCH_SORT_ITEMS,
                [](const unsigned*, unsigned* w, size_t len) { std::sort(w, w + len); });
  } else {
    std::printf("RESULT bench sort SKIP block_radix_sort is not in this coopd's catalogue yet\n");
  }
  CU(cuModuleUnload(m));
}

}  // namespace

int main(int argc, char** argv) {
  bool seeded = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + ": missing value");
      return argv[++i];
    };
    if (a == "--kernels") {
      opt.kernels = value();
    } else if (a == "--cubins") {
      opt.cubins = value();
    } else if (a == "--seed") {
      opt.seed = std::stoull(value());
      seeded = true;
    } else if (a == "--reps") {
      opt.reps = std::stoi(value());
    } else if (a == "--check-only") {
      opt.bench = false;
    } else if (a == "--bench-only") {
      opt.check = false;
    } else if (a == "--small") {
      opt.small = true;
      opt.bench = false;
    } else if (a == "--link-only") {
      opt.link_only = true;
    } else if (a.rfind("--", 0) == 0 || !opt.dir.empty()) {
      Die("usage: gpu_suite ARTIFACT_DIR [--kernels F] [--cubins DIR] [--seed N] [--reps N] "
          "[--check-only|--bench-only|--small|--link-only]");
    } else {
      opt.dir = a;
    }
  }
  if (opt.dir.empty()) Die("usage: gpu_suite ARTIFACT_DIR [options]");
  if (!seeded) opt.seed = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  rng.seed(opt.seed);
  std::printf("seed: %llu (repeat with --seed)\n", static_cast<unsigned long long>(opt.seed));

  std::istringstream mf(Read(opt.dir + "/manifest.txt"));
  for (std::string line; std::getline(mf, line);) {
    std::istringstream f(line);
    std::string name;
    f >> name;
    for (std::string p; f >> p;) {
      manifest[name].push_back({p.substr(0, p.find(':')), p.substr(p.find(':') + 1)});
    }
  }

  if (!opt.link_only) {
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
      std::printf("SKIP: no GPU\n");
      return 0;
    }
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    char name[256];
    CU(cuDeviceGetName(name, sizeof(name), dev));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CUDART(cudaSetDevice(0));
    std::printf("device: %s\n", name);
  }
  if (opt.check) RunChecks();
  if (opt.bench) RunBench();
  std::printf("%s: %d passed, %d failed, %d skipped, %d known coopd bugs (XFAIL)\n",
              failures ? "FAILED" : "OK", passes, failures, skips, known_failures);
  return failures ? 1 : 0;
}

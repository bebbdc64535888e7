#include "server/engine/compiler.h"

#include <cctype>
#include <chrono>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "server/toolchain/cuda_libs.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

// NVRTC and nvJitLink, loaded on first use (cuda_libs.h). Every entry point of this file calls
// LoadCuda() first and returns its error; the helpers below run only after it succeeded.
const CudaApi& Api() {
  return **LoadCuda();
}

absl::Status CudaLoaded() {
  auto api = LoadCuda();
  return api.ok() ? absl::OkStatus() : api.status();
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { Api().nvrtcDestroyProgram(&p); }
};
using ProgramPtr = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

struct LinkDeleter {
  void operator()(nvJitLinkHandle h) const { Api().nvJitLinkDestroy(&h); }
};
using LinkPtr = std::unique_ptr<std::remove_pointer_t<nvJitLinkHandle>, LinkDeleter>;

std::string ProgramLog(nvrtcProgram prog) {
  size_t size = 0;
  if (Api().nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (Api().nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);
  return log;
}

std::string LinkErrorLog(nvJitLinkHandle h) {
  size_t size = 0;
  if (Api().nvJitLinkGetErrorLogSize(h, &size) != NVJITLINK_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (Api().nvJitLinkGetErrorLog(h, log.data()) != NVJITLINK_SUCCESS) return "";
  log.resize(size - 1);
  return log;
}

std::string LinkInfoLog(nvJitLinkHandle h) {
  size_t size = 0;
  if (Api().nvJitLinkGetInfoLogSize(h, &size) != NVJITLINK_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (Api().nvJitLinkGetInfoLog(h, log.data()) != NVJITLINK_SUCCESS) return "";
  log.resize(size - 1);
  return log;
}

const char* LinkResultName(nvJitLinkResult r) {
  switch (r) {
    case NVJITLINK_SUCCESS:
      return "success";
    case NVJITLINK_ERROR_UNRECOGNIZED_OPTION:
      return "unrecognized option";
    case NVJITLINK_ERROR_MISSING_ARCH:
      return "missing -arch";
    case NVJITLINK_ERROR_INVALID_INPUT:
      return "invalid input";
    case NVJITLINK_ERROR_PTX_COMPILE:
      return "PTX compile error";
    case NVJITLINK_ERROR_NVVM_COMPILE:
      return "NVVM compile error";
    case NVJITLINK_ERROR_INTERNAL:
      return "internal error";
    default:
      return "error";
  }
}

absl::Status LinkError(nvJitLinkHandle h, nvJitLinkResult r, std::string_view step) {
  std::string log = h != nullptr ? LinkErrorLog(h) : "";
  return absl::InternalError(StrCat("nvJitLink: ", step, " failed (", LinkResultName(r), ", code ",
                                    static_cast<int>(r), ")", log.empty() ? "" : ":\n", log));
}

const char* PchStatusName(nvrtcResult r) {
  switch (r) {
    case NVRTC_SUCCESS:
      return "created";
    case NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED:
      return "not created: PCH heap exhausted";
    case NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED:
      return "not attempted (reused or not needed)";
    default:
      return Api().nvrtcGetErrorString(r);
  }
}

std::once_flag g_pch_heap_once;

// NVRTC reports automatic-PCH activity ("creating precompiled header file ...", "using
// precompiled header file ...") in the program log. That depends on the worker's history, not
// on the source, so it must not reach the (cached, shared) artifact; pch_status carries it.
std::string StripPchNotes(const std::string& log) {
  std::string out;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string_view line(log.data() + start, end - start);
    if (line.find("precompiled header file") == std::string_view::npos) {
      out.append(line);
      out.push_back('\n');
    }
    start = end + 1;
  }
  if (!out.empty() && log.back() != '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<std::string> SemanticOptions(const Toolchain& tc, const std::string& arch) {
  // The CUDA include directory is always on the path, not only for fp16/bf16 specs: without
  // <cuda_fp16.h>, CCCL 3.0.1's ThreadReduce takes a SIMD path meant for __half for any type
  // with min/max/plus/multiplies over 4+ items (enable_sm80_simd_reduction loses its
  // is_same<T, __half> clause), which asserts in debug builds and silently returns the first
  // item in release builds. Found by device/gpu_check on an H200.
  return {"-dlto",
          "-rdc=true",
          "-arch=" + arch,
          "-std=c++17",
          "-I" + tc.cccl_include,
          "-I" + tc.cuda_include};
}

absl::StatusOr<CompileOutput> CompileToLtoIr(const std::vector<EmbeddedHeader>& headers,
                                             const std::string& source,
                                             const std::vector<std::string>& semantic_options,
                                             const CompileSettings& settings) {
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = CudaLoaded(); !s.ok()) return s;
  if (settings.pch) {
    std::call_once(g_pch_heap_once, [&] { Api().nvrtcSetPCHHeapSize(settings.pch_heap_bytes); });
  }
  std::vector<const char*> header_sources, header_names;
  for (const auto& h : headers) {
    header_sources.push_back(h.contents.c_str());
    header_names.push_back(h.name.c_str());
  }
  nvrtcProgram raw = nullptr;
  nvrtcResult r = Api().nvrtcCreateProgram(&raw, source.c_str(), "coop_unit.cu",
                                           static_cast<int>(header_sources.size()),
                                           header_sources.data(), header_names.data());
  if (r != NVRTC_SUCCESS) {
    return absl::InternalError(
        StrCat("nvrtc: nvrtcCreateProgram failed: ", Api().nvrtcGetErrorString(r)));
  }
  ProgramPtr prog(raw);

  std::vector<std::string> all = semantic_options;
  if (settings.pch) all.push_back("-pch");
  std::vector<const char*> argv;
  for (const auto& o : all) argv.push_back(o.c_str());
  r = Api().nvrtcCompileProgram(prog.get(), static_cast<int>(argv.size()), argv.data());
  CompileOutput out;
  const std::string raw_log = ProgramLog(prog.get());
  out.log = StripPchNotes(raw_log);
  if (r != NVRTC_SUCCESS) {
    return absl::InternalError(
        StrCat("nvrtc: compile failed (", Api().nvrtcGetErrorString(r), "):\n", out.log));
  }
  if (!settings.pch) {
    out.pch_status = "off";
  } else if (raw_log.find("using precompiled header file") != std::string::npos) {
    out.pch_status = "used";
  } else {
    out.pch_status = PchStatusName(Api().nvrtcGetPCHCreateStatus(prog.get()));
  }

  size_t size = 0;
  if ((r = Api().nvrtcGetLTOIRSize(prog.get(), &size)) != NVRTC_SUCCESS || size == 0) {
    return absl::InternalError(StrCat("nvrtc: no LTO-IR produced: ", Api().nvrtcGetErrorString(r)));
  }
  out.ltoir.resize(size);
  if ((r = Api().nvrtcGetLTOIR(prog.get(), out.ltoir.data())) != NVRTC_SUCCESS) {
    return absl::InternalError(
        StrCat("nvrtc: nvrtcGetLTOIR failed: ", Api().nvrtcGetErrorString(r)));
  }
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

namespace {

// True when `ptx` declares `sym` as an external function: ".extern .func ... sym(".
bool PtxDeclaresExternFunction(const std::string& ptx, const std::string& sym) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t pos = ptx.find(sym); pos != std::string::npos; pos = ptx.find(sym, pos + 1)) {
    if ((pos > 0 && ident(ptx[pos - 1])) ||
        (pos + sym.size() < ptx.size() && ident(ptx[pos + sym.size()]))) {
      continue;
    }
    const size_t line = ptx.rfind('\n', pos);
    const size_t start = line == std::string::npos ? 0 : line + 1;
    if (ptx.compare(start, 13, ".extern .func") == 0) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<Layout>> QueryLayouts(const std::string& ltoir, const std::string& arch,
                                                 const std::vector<LayoutSymbols>& symbols,
                                                 const std::vector<LinkInput>& extra_inputs,
                                                 const std::vector<std::string>& required_symbols) {
  if (absl::Status s = CudaLoaded(); !s.ok()) return s;
  // Link to PTX: -lto makes nvJitLink run NVVM over the IR; -ptx stops before ptxas.
  const std::string arch_opt = "-arch=" + arch;
  const char* opts[] = {arch_opt.c_str(), "-lto", "-ptx"};
  nvJitLinkHandle raw = nullptr;
  nvJitLinkResult r = Api().nvJitLinkCreate(&raw, 3, opts);
  if (r != NVJITLINK_SUCCESS) return LinkError(nullptr, r, "create (layout query)");
  LinkPtr h(raw);
  r = Api().nvJitLinkAddData(h.get(), NVJITLINK_INPUT_LTOIR, ltoir.data(), ltoir.size(),
                             "artifact");
  if (r != NVJITLINK_SUCCESS) return LinkError(h.get(), r, "add LTO-IR (layout query)");
  // The frontend's bytes: their failures are the caller's to fix.
  auto caller_error = [&](const absl::Status& s) {
    return absl::InvalidArgumentError(
        StrCat("op.user: the operator's LTO-IR does not link with the primitive for ", arch, ": ",
               s.message()));
  };
  for (const auto& in : extra_inputs) {
    r = Api().nvJitLinkAddData(h.get(), NVJITLINK_INPUT_LTOIR, in.data.data(), in.data.size(),
                               in.name.c_str());
    if (r != NVJITLINK_SUCCESS) return caller_error(LinkError(h.get(), r, "add " + in.name));
  }
  if ((r = Api().nvJitLinkComplete(h.get())) != NVJITLINK_SUCCESS) {
    absl::Status s = LinkError(h.get(), r, "link to PTX (layout query)");
    return extra_inputs.empty() ? s : caller_error(s);
  }
  size_t size = 0;
  if ((r = Api().nvJitLinkGetLinkedPtxSize(h.get(), &size)) != NVJITLINK_SUCCESS) {
    return LinkError(h.get(), r, "get PTX size (layout query)");
  }
  std::string ptx(size, '\0');
  if ((r = Api().nvJitLinkGetLinkedPtx(h.get(), ptx.data())) != NVJITLINK_SUCCESS) {
    return LinkError(h.get(), r, "get PTX (layout query)");
  }
  auto read = [&](const std::string& sym) -> absl::StatusOr<uint64_t> {
    // e.g. ".visible .global .align 8 .u64 coop_..._temp_bytes = 44;"
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t pos = ptx.find(sym); pos != std::string::npos; pos = ptx.find(sym, pos + 1)) {
      if (pos > 0 && ident(ptx[pos - 1])) continue;
      size_t p = pos + sym.size();
      if (p < ptx.size() && ident(ptx[p])) continue;
      while (p < ptx.size() && ptx[p] == ' ') ++p;
      if (p >= ptx.size() || ptx[p] != '=') continue;
      ++p;
      while (p < ptx.size() && ptx[p] == ' ') ++p;
      size_t digits = p;
      while (digits < ptx.size() && std::isdigit(static_cast<unsigned char>(ptx[digits]))) ++digits;
      if (digits == p || digits >= ptx.size() || ptx[digits] != ';') continue;
      return std::stoull(ptx.substr(p, digits - p));
    }
    return absl::InternalError(
        StrCat("layout query: symbol ", sym, " not found in the linked PTX"));
  };
  for (const auto& sym : required_symbols) {
    // After LTO a defined operator is inlined away; one left undefined stays as a declaration.
    if (PtxDeclaresExternFunction(ptx, sym)) {
      return absl::InvalidArgumentError(
          StrCat("op.user.name: the operator's LTO-IR does not define \"", sym,
                 "\"; it must define extern \"C\" __device__ ", sym, "(...) for ", arch));
    }
  }
  std::vector<Layout> layouts;
  for (const auto& s : symbols) {
    auto bytes = read(s.bytes_symbol);
    if (!bytes.ok()) return bytes.status();
    auto align = read(s.align_symbol);
    if (!align.ok()) return align.status();
    layouts.push_back(Layout{*bytes, *align});
  }
  return layouts;
}

absl::StatusOr<std::string> LinkCubin(const std::vector<LinkInput>& inputs, const std::string& arch,
                                      const std::vector<std::string>& extra_options) {
  if (absl::Status s = CudaLoaded(); !s.ok()) return s;
  std::vector<std::string> opts = {"-arch=" + arch, "-lto"};
  opts.insert(opts.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvJitLinkHandle raw = nullptr;
  nvJitLinkResult r = Api().nvJitLinkCreate(&raw, static_cast<uint32_t>(argv.size()), argv.data());
  if (r != NVJITLINK_SUCCESS) return LinkError(nullptr, r, "create");
  LinkPtr h(raw);
  for (const auto& in : inputs) {
    nvJitLinkInputType type = in.kind == LinkInput::kLtoIr ? NVJITLINK_INPUT_LTOIR
                              : in.kind == LinkInput::kPtx ? NVJITLINK_INPUT_PTX
                                                           : NVJITLINK_INPUT_CUBIN;
    r = Api().nvJitLinkAddData(h.get(), type, in.data.data(), in.data.size(), in.name.c_str());
    if (r != NVJITLINK_SUCCESS) return LinkError(h.get(), r, StrCat("add ", in.name));
  }
  if ((r = Api().nvJitLinkComplete(h.get())) != NVJITLINK_SUCCESS) {
    std::string info = LinkInfoLog(h.get());
    absl::Status s = LinkError(h.get(), r, "link");
    return absl::InternalError(StrCat(s.message(), info.empty() ? "" : "\ninfo log:\n", info));
  }
  size_t size = 0;
  if ((r = Api().nvJitLinkGetLinkedCubinSize(h.get(), &size)) != NVJITLINK_SUCCESS) {
    return LinkError(h.get(), r, "get cubin size");
  }
  std::string cubin(size, '\0');
  if ((r = Api().nvJitLinkGetLinkedCubin(h.get(), cubin.data())) != NVJITLINK_SUCCESS) {
    return LinkError(h.get(), r, "get cubin");
  }
  return cubin;
}

}  // namespace coopd

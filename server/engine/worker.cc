#include "server/engine/worker.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "coop/v1/worker.pb.h"
#include "device/embedded_headers.h"
#include "server/engine/bitcode.h"
#include "server/engine/compiler.h"
#include "server/engine/framing.h"
#include "server/engine/private_dir.h"

namespace coopd {
namespace {

namespace wv1 = coop::worker::v1;

uint64_t g_memory_limit_bytes = 0;
bool g_confined = false;
std::string g_temp;  // the worker's own temporary directory (its TMPDIR)

// Whether a compiler log holds a diagnostic about a source position: NVRTC's
// "file(12): error: ..." / "file(1): catastrophic error: ...", clang's "file:12:3: error: ..." /
// "file:2:10: fatal error: ...".
// Not "nvrtc: error: failed to open libnvrtc-builtins...", which has no position.
bool HasSourceDiagnostic(const std::string& log) {
  for (const char* nvrtc : {"): error", "): catastrophic error"}) {
    if (log.find(nvrtc) != std::string::npos) return true;
  }
  for (const char* clang : {": error: ", ": fatal error: "}) {
    for (size_t at = log.find(clang); at != std::string::npos; at = log.find(clang, at + 1)) {
      if (at > 0 && std::isdigit(static_cast<unsigned char>(log[at - 1]))) return true;
    }
  }
  return false;
}

void Fail(wv1::Reply* reply, const absl::Status& s) {
  reply->set_code(static_cast<int>(s.code()));
  std::string message(s.message());
  if (g_confined && (message.find("cannot open source file") != std::string::npos ||
                     message.find("cannot open file '") != std::string::npos ||
                     message.find("' file not found") != std::string::npos)) {
    // The file may exist: the sandbox kept the compiler from opening it.
    message +=
        "\n(note: compiles are confined: they read only the CCCL and CUDA headers, coopd's own "
        "and the compiler's files; see docs/security.md)";
  }
  if (g_memory_limit_bytes > 0) {
    const std::string limit = "this worker's address space is limited to " +
                              std::to_string(g_memory_limit_bytes >> 20) +
                              " MiB by --worker-memory-mb";
    // What NVRTC ("unable to obtain mapped memory", a PCH heap it cannot map), clang and LLVM
    // ("out of memory", "Allocation failed"), the C++ runtime and the loader (the worker opens
    // NVRTC and nvJitLink for its first job, under the limit: toolchain/cuda_libs.h) say when an
    // allocation fails.
    bool out_of_memory = false;
    for (const char* sign : {"unable to obtain mapped memory", "LLVM ERROR: out of memory",
                             "Allocation failed", "std::bad_alloc", "PCH Heap initialization",
                             "failed to map segment from shared object"}) {
      if (message.find(sign) != std::string::npos) out_of_memory = true;
    }
    if (out_of_memory) {
      // A limit, not a compiler bug; said first, so that the bounded status message keeps it.
      reply->set_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
      message = "compile ran out of memory: " + limit +
                " (raise it, or 0 for no limit; docs/security.md):\n" + message;
    } else if (!HasSourceDiagnostic(message)) {
      // NVRTC and nvJitLink report a failed allocation in many guises (even "failed to open
      // libnvrtc-builtins"); say that a limit was in force. Not when the compiler printed a
      // diagnostic ("error: "): that is the user's code, and the note would mislead.
      message += "\n(note: " + limit + "; the failure may be that limit)";
    }
  }
  reply->set_message(message);
}

void CompileBitcode(const wv1::CompileJob& job, wv1::Reply* reply) {
  BitcodeJob b;
  b.clang = job.clang().program();
  b.identity = job.clang().identity();
  b.workspace = job.clang().workspace();
  b.scratch = g_temp;
  b.source = job.source();
  b.arch = job.arch();
  b.options.assign(job.options().begin(), job.options().end());
  b.entries.assign(job.entries().begin(), job.entries().end());
  for (const auto& q : job.layouts()) b.layouts.push_back({q.bytes_symbol(), q.align_symbol()});
  b.pch = job.pch();
  auto out = CompileToBitcode(b);
  if (!out.ok()) return Fail(reply, out.status());
  for (const Layout& l : out->layouts) {
    auto* pb = reply->add_layouts();
    pb->set_bytes(l.bytes);
    pb->set_align(l.align);
  }
  for (auto& name : out->internalized) reply->add_internalized(std::move(name));
  reply->set_pch_built(out->pch_built);
  reply->set_bitcode(std::move(out->bitcode));
  reply->set_log(out->log);
  reply->set_compile_ms(out->compile_ms);
  reply->set_pch_status(out->pch_status);
}

void Compile(const std::vector<EmbeddedHeader>& headers, const wv1::CompileJob& job,
             wv1::Reply* reply) {
  if (job.backend() == wv1::CompileJob::CLANG) return CompileBitcode(job, reply);
  CompileSettings settings;
  settings.pch = job.pch();
  if (job.pch_heap_bytes() > 0) settings.pch_heap_bytes = job.pch_heap_bytes();
  std::vector<std::string> options(job.options().begin(), job.options().end());
  auto out = CompileToLtoIr(headers, job.source(), options, settings);
  if (!out.ok()) return Fail(reply, out.status());
  const auto start = std::chrono::steady_clock::now();
  std::vector<LayoutSymbols> symbols;
  for (const auto& q : job.layouts()) symbols.push_back({q.bytes_symbol(), q.align_symbol()});
  std::vector<LinkInput> extra;
  if (!job.probe_source().empty()) {
    CompileSettings plain;
    plain.pch = false;
    auto probe = CompileToLtoIr({}, job.probe_source(), options, plain);
    if (!probe.ok()) return Fail(reply, probe.status());
    extra.push_back({LinkInput::kLtoIr, "operator probe", std::move(probe->ltoir)});
  }
  for (const auto& in : job.layout_inputs()) {
    extra.push_back({LinkInput::kLtoIr, in.name(), in.data()});
  }
  std::vector<std::string> required(job.required_symbols().begin(), job.required_symbols().end());
  auto layouts = QueryLayouts(out->ltoir, job.arch(), symbols, extra, required);
  if (!layouts.ok()) return Fail(reply, layouts.status());
  reply->set_layout_ms(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  for (const Layout& l : *layouts) {
    auto* pb = reply->add_layouts();
    pb->set_bytes(l.bytes);
    pb->set_align(l.align);
  }
  reply->set_ltoir(std::move(out->ltoir));
  reply->set_log(out->log);
  reply->set_compile_ms(out->compile_ms);
  reply->set_pch_status(out->pch_status);
}

void Link(const wv1::LinkJob& job, wv1::Reply* reply) {
  std::vector<LinkInput> inputs;
  for (const auto& in : job.inputs()) {
    LinkInput::Kind kind = in.kind() == wv1::LinkInput::PTX     ? LinkInput::kPtx
                           : in.kind() == wv1::LinkInput::CUBIN ? LinkInput::kCubin
                                                                : LinkInput::kLtoIr;
    inputs.push_back({kind, in.name(), in.data()});
  }
  std::vector<std::string> options(job.options().begin(), job.options().end());
  const auto start = std::chrono::steady_clock::now();
  auto cubin = LinkCubin(inputs, job.arch(), options);
  reply->set_link_ms(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  if (!cubin.ok()) return Fail(reply, cubin.status());
  reply->set_cubin(std::move(*cubin));
}

}  // namespace

int RunWorker(int fd, pid_t parent, uint64_t memory_limit_bytes, SandboxPolicy sandbox,
              std::string temp) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 1;  // the daemon died before we got here
  if (memory_limit_bytes > 0) {
    g_memory_limit_bytes = memory_limit_bytes;
    rlimit limit{memory_limit_bytes, memory_limit_bytes};
    setrlimit(RLIMIT_AS, &limit);
  }
  signal(SIGINT, SIG_IGN);  // the daemon decides when workers stop
  signal(SIGPIPE, SIG_IGN);
  // Its own temporary directory: NVRTC's automatic PCH (written to $TMPDIR) and clang's
  // scratch files go there, and it is the one place it may write. The daemon made it (mkdtemp
  // in its private parent); it is used only if it is still a real 0700 directory of our uid.
  // Started by hand without one, the worker makes its own, never reusing an existing name.
  absl::Status temp_ok = absl::OkStatus();
  if (temp.empty()) {
    auto made = MakePrivateTempDir(TempBase(), kWorkerTempPrefix);
    if (made.ok()) temp = *made;
    temp_ok = made.status();
  } else {
    temp_ok = VerifyPrivateDir(temp);
  }
  if (temp_ok.ok()) {
    g_temp = temp;
    setenv("TMPDIR", temp.c_str(), 1);
    sandbox.write.insert(sandbox.write.begin(), temp);  // first: the private root's stage
  } else {
    spdlog::warn("worker {}: no temporary directory: {}", static_cast<int>(getpid()),
                 std::string(temp_ok.message()));
  }
  if (absl::Status s = ConfineSelf(sandbox); !s.ok()) {
    // The daemon's log is this process's stdout, in the daemon's format (server/daemon/main.cc).
    spdlog::warn("worker {}: {}{}", static_cast<int>(getpid()), std::string(s.message()),
                 sandbox.mode == SandboxMode::kRequire ? "; exiting" : "; running unconfined");
    if (sandbox.mode == SandboxMode::kRequire) return 4;
  } else {
    g_confined = sandbox.mode != SandboxMode::kOff;
  }
  std::vector<EmbeddedHeader> headers;
  for (const auto& f : coop_device::EmbeddedHeaders()) {
    headers.push_back({std::string(f.name), std::string(f.contents)});
  }
  for (;;) {
    wv1::Request request;
    absl::Status s = ReadFrame(fd, &request, std::nullopt);
    if (!s.ok()) return absl::IsUnavailable(s) ? 0 : 3;  // closed: the daemon is done with us
    wv1::Reply reply;
    reply.set_id(request.id());
    if (request.has_compile()) {
      Compile(headers, request.compile(), &reply);
    } else if (request.has_link()) {
      Link(request.link(), &reply);
    } else {
      Fail(&reply, absl::InvalidArgumentError("worker: empty request"));
    }
    if (!WriteFrame(fd, reply).ok()) return 0;
  }
}

}  // namespace coopd

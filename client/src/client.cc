#include "coop/client.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <ostream>
#include <string_view>
#include <thread>

#include "artifact_cache.h"
#include "client_internal.h"
#include "coop/paths.h"
#include "coop/v1/coop.grpc.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "reply_reader.h"

namespace coop {
namespace {

// coopd marks every status it produces itself with this trailing metadata (server/
// grpc_service.cc); a status without it came from the client's gRPC library (the transport).
constexpr char kStatusOriginKey[] = "coopd-status";
constexpr char kStatusOriginServer[] = "server";
// The request metadata that asks coopd for the whole message of a bounded error, and the type
// of the detail that carries it (server/rpc/grpc_service.h).
constexpr char kErrorDetailsKey[] = "coopd-error-details";
// Who this client is, for coopd's per-client limits on the Unix socket (which tells coopd
// nothing about its peer): "<client_name>/<pid>", printable ASCII, at most 64 bytes.
constexpr char kClientMetadataKey[] = "coopd-client";

std::string ClientMetadata(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 48)) out += c >= 0x20 && c <= 0x7E ? c : '?';
  return out + "/" + std::to_string(getpid());
}
constexpr char kErrorDetailTypeUrl[] = "type.googleapis.com/coop.v1.ErrorDetail";
// The trailing metadata that carries the call's request id (server/rpc/grpc_service.h).
constexpr char kRequestIdKey[] = "x-request-id";

bool FromServer(const grpc::ClientContext& ctx) {
  const auto& trailers = ctx.GetServerTrailingMetadata();
  auto it = trailers.find(kStatusOriginKey);
  return it != trailers.end() &&
         std::string_view(it->second.data(), it->second.size()) == kStatusOriginServer;
}

// `ctx` is the finished call's context. Only an UNAVAILABLE the transport produced (coopd did
// not answer) says "not reachable"; coopd's own UNAVAILABLE ("retry") keeps its message.
// `socket`: where the call went (the socket path, or the gRPC target).
Error FromGrpc(const grpc::Status& s, const grpc::ClientContext& ctx, const std::string& socket) {
  Error e;
  e.code = static_cast<ErrorCode>(s.error_code());
  e.message = s.error_message();
  e.from_server = FromServer(ctx);
  const auto& trailers = ctx.GetServerTrailingMetadata();
  if (auto it = trailers.find(kRequestIdKey); it != trailers.end()) {
    e.request_id.assign(it->second.data(), it->second.size());
  }
  // The whole message, when coopd summarized it and the call asked for it (coop.proto: Errors).
  if (!s.error_details().empty()) {
    v1::StatusDetails details;
    if (details.ParseFromString(s.error_details())) {
      for (const auto& any : details.details()) {
        v1::ErrorDetail detail;
        if (any.type_url() == kErrorDetailTypeUrl && detail.ParseFromString(any.value())) {
          e.details = detail.message();
        }
      }
    }
  }
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && !e.from_server) {
    e.message = "coopd is not reachable on " + socket + " (is it running?): " + e.message;
  }
  return e;
}

void UserOperatorToProto(const UserOperator& in, v1::UserOperator* u) {
  u->set_name(in.name);
  u->set_source(in.source);
  u->set_ltoir(in.ltoir);
  for (const auto& d : in.operand_dtypes) u->add_operand_dtypes(d);
  u->set_result_dtype(in.result_dtype);
  u->set_stateful(in.stateful);
  u->set_digest(in.digest);
  u->set_commutative(in.commutative);
  u->set_by_pointer(in.by_pointer);
}

UserOperator UserOperatorFromProto(const v1::UserOperator& u) {
  UserOperator out;
  out.name = u.name();
  out.operand_dtypes.assign(u.operand_dtypes().begin(), u.operand_dtypes().end());
  out.result_dtype = u.result_dtype();
  out.stateful = u.stateful();
  out.digest = u.digest();
  out.commutative = u.commutative();
  out.by_pointer = u.by_pointer();
  return out;
}

AlgorithmChoice FromProto(const v1::AlgorithmChoice& c) {
  return {c.requested(), c.chosen(), c.reason(), c.table_version(), c.table_digest()};
}

// The options messages a spec sets fields in, by their proto names.
std::vector<const char*> FamilyOptionsSet(const Spec& s) {
  std::vector<const char*> set;
  if (s.scan.with_aggregate) set.push_back("scan");
  if (s.exchange.warp_time_slicing) set.push_back("exchange");
  if (!s.radix_sort.value_dtype.empty() || s.radix_sort.radix_bits != 0) {
    set.push_back("radix_sort");
  }
  if (!s.merge_sort.value_dtype.empty()) set.push_back("merge_sort");
  if (!s.top_k.value_dtype.empty()) set.push_back("top_k");
  if (s.histogram.bins != 0) set.push_back("histogram");
  if (s.run_length_decode.decoded_items_per_thread != 0) set.push_back("run_length_decode");
  if (s.radix_rank.radix_bits != 0) set.push_back("radix_rank");
  return set;
}

// The proto carries one options message per spec (a oneof): refuse a spec that sets two rather
// than send only the last.
std::optional<Error> CheckFamilyOptions(const Spec& s, const std::string& where) {
  const auto set = FamilyOptionsSet(s);
  if (set.size() <= 1) return std::nullopt;
  std::string names;
  for (const char* n : set) names += std::string(names.empty() ? "" : ", ") + n;
  return Error{ErrorCode::kInvalidArgument,
               where + ": family options set in " + names +
                   "; a spec takes one options message, the one its family's catalog entry "
                   "names (family_options)",
               false, "", ""};
}

v1::PrimitiveSpec ToProto(const Spec& s) {
  v1::PrimitiveSpec p;
  p.set_family(s.family);
  p.set_method(s.method);
  p.set_dtype(s.dtype);
  if (s.block.x != 0 || s.block.y > 1 || s.block.z > 1) {
    p.mutable_block()->set_x(s.block.x);
    p.mutable_block()->set_y(s.block.y);
    p.mutable_block()->set_z(s.block.z);
  }
  p.set_items_per_thread(s.items_per_thread);
  p.set_algorithm(s.algorithm);
  if (!s.user_op.name.empty()) {
    UserOperatorToProto(s.user_op, p.mutable_op()->mutable_user());
  } else if (!s.op.empty()) {
    p.mutable_op()->set_builtin(s.op);
  }
  p.set_warp_threads(s.warp_threads);
  p.set_arch(s.arch);
  switch (s.calling_convention) {
    case CallingConvention::kC:
      p.set_calling_convention(v1::CALLING_CONVENTION_C);
      break;
    case CallingConvention::kNumba:
      p.set_calling_convention(v1::CALLING_CONVENTION_NUMBA);
      break;
    default:
      break;
  }
  // At most one of these is set (CheckFamilyOptions); the oneof would keep only the last.
  if (s.scan.with_aggregate) p.mutable_scan()->set_with_aggregate(true);
  if (s.exchange.warp_time_slicing) p.mutable_exchange()->set_warp_time_slicing(true);
  if (!s.radix_sort.value_dtype.empty() || s.radix_sort.radix_bits != 0) {
    p.mutable_radix_sort()->set_value_dtype(s.radix_sort.value_dtype);
    p.mutable_radix_sort()->set_radix_bits(s.radix_sort.radix_bits);
  }
  if (!s.merge_sort.value_dtype.empty()) {
    p.mutable_merge_sort()->set_value_dtype(s.merge_sort.value_dtype);
  }
  if (!s.top_k.value_dtype.empty()) p.mutable_top_k()->set_value_dtype(s.top_k.value_dtype);
  if (s.histogram.bins != 0) p.mutable_histogram()->set_bins(s.histogram.bins);
  if (s.run_length_decode.decoded_items_per_thread != 0) {
    p.mutable_run_length_decode()->set_decoded_items_per_thread(
        s.run_length_decode.decoded_items_per_thread);
  }
  if (s.radix_rank.radix_bits != 0) p.mutable_radix_rank()->set_radix_bits(s.radix_rank.radix_bits);
  if (!s.prefix_callback.name.empty()) {
    UserOperatorToProto(s.prefix_callback, p.mutable_prefix_callback());
  }
  if (s.user_type_size != 0 || s.user_type_align != 0) {
    p.mutable_user_type()->set_size(s.user_type_size);
    p.mutable_user_type()->set_align(s.user_type_align);
  }
  return p;
}

Spec FromProto(const v1::PrimitiveSpec& p) {
  Spec s;
  s.family = p.family();
  s.method = p.method();
  s.dtype = p.dtype();
  s.block = {p.block().x(), p.block().y(), p.block().z()};
  s.items_per_thread = p.items_per_thread();
  s.algorithm = p.algorithm();
  s.op = p.op().builtin();
  if (p.op().has_user()) s.user_op = UserOperatorFromProto(p.op().user());
  if (p.has_prefix_callback()) s.prefix_callback = UserOperatorFromProto(p.prefix_callback());
  s.warp_threads = p.warp_threads();
  s.arch = p.arch();
  s.calling_convention = p.calling_convention() == v1::CALLING_CONVENTION_NUMBA
                             ? CallingConvention::kNumba
                             : CallingConvention::kC;
  s.scan.with_aggregate = p.scan().with_aggregate();
  s.exchange.warp_time_slicing = p.exchange().warp_time_slicing();
  s.radix_sort.value_dtype = p.radix_sort().value_dtype();
  s.radix_sort.radix_bits = p.radix_sort().radix_bits();
  s.merge_sort.value_dtype = p.merge_sort().value_dtype();
  s.top_k.value_dtype = p.top_k().value_dtype();
  s.histogram.bins = p.histogram().bins();
  s.run_length_decode.decoded_items_per_thread = p.run_length_decode().decoded_items_per_thread();
  s.radix_rank.radix_bits = p.radix_rank().radix_bits();
  s.user_type_size = p.user_type().size();
  s.user_type_align = p.user_type().align();
  return s;
}

Toolchain FromProto(const v1::Toolchain& t) {
  return {t.nvrtc_version(), t.nvjitlink_version(), t.cccl_version(), t.header_digest(),
          t.clang_version()};
}

}  // namespace

const char* ErrorCodeName(ErrorCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i <= 16 ? kNames[i] : "UNKNOWN";
}

const char* OriginName(Origin origin) {
  switch (origin) {
    case Origin::kCompiled:
      return "compiled";
    case Origin::kMemory:
      return "memory";
    case Origin::kDisk:
      return "disk";
    case Origin::kRemote:
      return "remote";
    default:
      return "unspecified";
  }
}

namespace {

// The directories of the shared library holding this client (libcoop_c.so, for the C ABI) and
// of the program, in that order, without duplicates.
std::vector<std::string> ClientDirs() {
  std::vector<std::string> dirs;
  auto add = [&dirs](const char* file) {
    char resolved[PATH_MAX];
    if (file == nullptr || *file == '\0' || realpath(file, resolved) == nullptr) return;
    std::string dir(resolved);
    dir = dir.substr(0, dir.rfind('/'));
    for (const auto& d : dirs) {
      if (d == dir) return;
    }
    dirs.push_back(dir);
  };
  Dl_info info;
  // For code linked into the program itself dladdr names the program as it was started
  // (possibly a bare name on PATH); /proc/self/exe below covers it.
  if (dladdr(reinterpret_cast<void*>(&ClientDirs), &info) != 0 && info.dli_fname != nullptr &&
      std::string_view(info.dli_fname).find('/') != std::string_view::npos) {
    add(info.dli_fname);
  }
  add("/proc/self/exe");
  return dirs;
}

// Finds the coopd binary for auto-start: $COOPD_BIN, next to the client library or this
// executable (installed layout: bin/coopctl beside bin/coopd), the build tree's
// ../server/coopd, then PATH. Empty when none is executable.
std::string FindCoopdBinary(const std::string& configured) {
  auto executable = [](const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; };
  if (!configured.empty()) return executable(configured) ? configured : "";
  if (const char* env = std::getenv("COOPD_BIN"); env != nullptr && *env != '\0') {
    return executable(env) ? env : "";
  }
  for (const std::string& dir : ClientDirs()) {
    for (const std::string& candidate : {dir + "/coopd", dir + "/../server/coopd"}) {
      if (executable(candidate)) return candidate;
    }
  }
  if (const char* path = std::getenv("PATH")) {
    std::string rest = path;
    for (size_t start = 0; start <= rest.size();) {
      size_t colon = rest.find(':', start);
      if (colon == std::string::npos) colon = rest.size();
      std::string candidate = rest.substr(start, colon - start) + "/coopd";
      if (colon > start && executable(candidate)) return candidate;
      start = colon + 1;
    }
  }
  return "";
}

// What an auto-started coopd's --idle-exit is (seconds) when COOPD_IDLE_EXIT is not set.
constexpr char kAutostartIdleExitSeconds[] = "1800";

// Starts `binary --socket socket --idle-exit 1800` detached (its own session, reparented to init,
// output appended to coopd.log beside the socket). Several processes may do this at once: coopd's
// lock on <socket>.lock lets exactly one of the daemons serve, the others exit at once.
// The socket's directory is created (0700) and checked first, and the log opened here with
// O_NOFOLLOW and checked (coop::OpenOwnFile): a directory or log another user planted is refused
// (*error says why) and nothing is started or written.
bool SpawnDaemon(const std::string& binary, const std::string& socket, std::string* error) {
  const std::string dir = coop::SocketDir(socket);
  // coopd creates it too; the log needs it first.
  for (size_t at = dir.find('/', 1); at != std::string::npos; at = dir.find('/', at + 1)) {
    mkdir(dir.substr(0, at).c_str(), 0700);
  }
  mkdir(dir.c_str(), 0700);
  coop::DirRule rule;
  rule.owner = static_cast<long>(geteuid());
  rule.who = "you";
  rule.fix = "remove it, or give a socket in a directory of your own (COOPD_SOCKET)";
  if (std::string why = coop::UnsafeDirReason(dir, rule); !why.empty()) {
    *error = why;
    return false;
  }
  const std::string log = dir + "/coopd.log";
  const int out = coop::OpenOwnFile(log, O_WRONLY | O_APPEND, error);
  if (out < 0) return false;
  std::vector<std::string> args = {binary, "--socket", socket};
  // A daemon nobody asked to keep goes away when unused: 30 min without calls, unless the
  // environment (which coopd inherits) sets its own COOPD_IDLE_EXIT (0: never).
  if (const char* idle = std::getenv("COOPD_IDLE_EXIT"); idle == nullptr || *idle == '\0') {
    args.insert(args.end(), {"--idle-exit", kAutostartIdleExitSeconds});
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = fork();
  if (child < 0) {
    close(out);
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (child == 0) {
    // Only async-signal-safe calls from here to exec.
    setsid();
    if (fork() != 0) _exit(0);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    // Nothing else of the client's: a daemon holding, say, the write end of a pipe its
    // starter reads would keep that reader waiting for as long as the daemon runs.
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
      for (int fd = 3; fd < 65536; ++fd) close(fd);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The contents of a file named by ClientOptions `field` (env `env`); with `secret`, refused when
// others may read or write it, its group may write it, or another user than this one or root
// owns it (coop::UnsafeSecretReason).
std::optional<std::string> ReadOptionFile(const std::string& path, const char* field,
                                          const char* env, bool secret, std::string* error) {
  const std::string what =
      std::string("ClientOptions::") + field + " (" + env + ") \"" + path + "\"";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = what + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::string text;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
    *error = what + ": not a regular file of at most 1 MiB";
  } else if (std::string why = secret ? coop::UnsafeSecretReason(st.st_mode, st.st_uid, "a secret")
                                      : std::string();
             !why.empty()) {
    *error = what + ": " + why;
  } else {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    if (n < 0) *error = what + ": cannot read: " + std::strerror(errno);
  }
  close(fd);
  if (!error->empty()) return std::nullopt;
  return text;
}

// The token of a token file: its first line that is neither empty nor a # comment, trimmed.
std::optional<std::string> TokenOf(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const size_t e = line.find_last_not_of(" \t\r");
    return line.substr(b, e - b + 1);
  }
  return std::nullopt;
}

// Fills an empty option from the environment.
void FromEnv(std::string* option, const char* env) {
  if (!option->empty()) return;
  if (const char* v = std::getenv(env); v != nullptr) *option = v;
}

}  // namespace

struct Client::Impl {
  ClientOptions options;
  // The bearer token sent with every call ("" for none), and an error in the access options
  // that every call returns instead of calling.
  std::string authorization;
  std::optional<Error> setup_error;
  // ClientOptions::socket_owner (COOPD_SOCKET_OWNER) as a uid; -1: none.
  long socket_owner_uid = -1;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Coop::Stub> stub;
  std::mutex autostart_mu;
  bool autostart_tried = false;  // guarded by autostart_mu: one spawn per Client
  std::unique_ptr<internal::ArtifactCache> artifacts;  // set by the constructor

  // Buffers for LTO-IR that arrives over several slices (reply_reader.h).
  std::shared_ptr<internal::BufferPool> buffers = std::make_shared<internal::BufferPool>();
  // Specialize and SpecializeBundle called with a raw reply (set by the constructor).
  std::unique_ptr<grpc::internal::RpcMethod> specialize_method, bundle_method;

  // Specialize or SpecializeBundle through the artifact cache (ClientOptions::artifact_cache_*):
  // sends the digests of the artifact held for this request; a digest-only reply takes the held
  // bytes (shared, not copied); complete replies are kept. The reply is read from gRPC's slices
  // by reply_reader.h, not parsed into a protobuf string.
  template <class Request>
  std::optional<Error> SpecializeCached(const grpc::internal::RpcMethod& method, Request req,
                                        std::shared_ptr<const internal::Reply>* out) {
    std::string key;
    std::shared_ptr<const internal::Reply> held;
    if (artifacts->enabled()) {
      key = internal::ArtifactCache::Key(req);
      held = artifacts->Find(key);
      if (held) internal::ArtifactCache::AddHave(*held, &req);
    }
    req.set_client(options.client_name);
    auto reply = std::make_shared<internal::Reply>();
    if (auto e = CallForReply(method, req, reply.get())) return e;
    if (reply->artifact.bytes_omitted()) {
      if (held && internal::ArtifactCache::Matches(*held, reply->artifact)) {
        reply->bytes_from = std::move(held);
        *out = std::move(reply);
        return std::nullopt;
      }
      // Not the artifact held (coopd would not do this): ask again for the whole reply.
      req.clear_have();
      if (auto e = CallForReply(method, req, reply.get())) return e;
    }
    if (!key.empty()) artifacts->Store(key, reply);
    *out = std::move(reply);
    return std::nullopt;
  }

  // SpecializeCached for the C ABI, which reads the reply as one whole message (a copy).
  template <class Request>
  std::optional<Error> SpecializeToMessage(const grpc::internal::RpcMethod& method, Request req,
                                           v1::SpecializeResponse* response) {
    std::shared_ptr<const internal::Reply> reply;
    if (auto e = SpecializeCached(method, std::move(req), &reply)) return e;
    internal::ArtifactCache::ToMessage(*reply, response->mutable_artifact());
    return std::nullopt;
  }

  // One Specialize-shaped call whose reply is read by reply_reader.h.
  template <class Request>
  std::optional<Error> CallForReply(const grpc::internal::RpcMethod& method, const Request& req,
                                    internal::Reply* reply) {
    grpc::ByteBuffer buffer;
    auto e = Call([&](grpc::ClientContext* ctx) {
      return grpc::internal::BlockingUnaryCall<Request, grpc::ByteBuffer,
                                               grpc::protobuf::MessageLite, grpc::ByteBuffer>(
          channel.get(), method, ctx, req, &buffer);
    });
    if (e) return e;
    std::vector<grpc::Slice> slices;
    std::string error;
    if (!buffer.Dump(&slices).ok() || !internal::ReadReply(slices, buffers.get(), reply, &error)) {
      Error bad;
      bad.code = ErrorCode::kInternal;
      bad.message = "coopd's reply to " + std::string(method.name()) + " is unreadable: " +
                    (error.empty() ? "gRPC could not hand over its bytes" : error);
      bad.from_server = true;
      return bad;
    }
    return std::nullopt;
  }

  template <class Request, class Response, class Method>
  std::optional<Error> Unary(Method method, const Request& req, Response* resp) {
    return Call([&](grpc::ClientContext* ctx) { return (stub.get()->*method)(ctx, req, resp); });
  }

  // Runs one unary call, `call(ctx)`; on a transport UNAVAILABLE (no daemon) with auto-start
  // on, starts coopd once and retries until it answers or the call's deadline passes.
  template <class CallFn>
  std::optional<Error> Call(const CallFn& call) {
    if (setup_error) return setup_error;
    if (auto e = CheckSocket()) return e;
    const auto deadline = std::chrono::system_clock::now() + options.timeout;
    bool started = false;
    std::string note;
    for (;;) {
      grpc::ClientContext ctx;
      ctx.set_deadline(deadline);
      if (options.full_errors) ctx.AddMetadata(kErrorDetailsKey, "full");
      ctx.AddMetadata(kClientMetadataKey, ClientMetadata(options.client_name));
      if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
      grpc::Status s = call(&ctx);
      if (s.ok()) return std::nullopt;
      Error e = FromGrpc(s, ctx, where());
      if (e.code != ErrorCode::kUnavailable || e.from_server) return e;
      if (!started) {
        started = true;
        note = Autostart();
        if (!note.empty()) {
          e.message += " " + note;
          return e;
        }
      }
      if (std::chrono::system_clock::now() + std::chrono::milliseconds(50) >= deadline) return e;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      // The daemon started since: check the socket it made before connecting to it.
      if (auto bad = CheckSocket()) return bad;
    }
  }

  // On the Unix socket, an error when the socket or its directory is not this user's
  // (coop::UnsafeSocketReason): checked before every call, so that gRPC's connect, which comes
  // next, reaches the socket checked (its directory lets no one else replace it). The token is
  // never sent to a socket another user owns.
  std::optional<Error> CheckSocket() const {
    if (!options.target.empty()) return std::nullopt;
    std::string why = coop::UnsafeSocketReason(options.socket_path, static_cast<long>(geteuid()),
                                               socket_owner_uid);
    if (why.empty()) return std::nullopt;
    Error e;
    e.code = ErrorCode::kFailedPrecondition;
    e.message = std::move(why) + " (docs/security.md, \"Other local users\")";
    return e;
  }

  // What the client talks to, for messages.
  const std::string& where() const {
    return options.target.empty() ? options.socket_path : options.target;
  }

  // One call through gRPC's generic stub, for methods this library has no generated code for
  // (the health service, Stop): `request`'s bytes go as they are, the reply's bytes come back in
  // *reply. No retry, no auto-start.
  grpc::Status GenericCall(const char* method, const std::string& request, grpc::ClientContext* ctx,
                           std::string* reply) {
    grpc::GenericStub stub(channel);
    ctx->set_deadline(std::chrono::system_clock::now() + options.timeout);
    if (!authorization.empty()) ctx->AddMetadata("authorization", authorization);
    grpc::Slice slice(request);
    grpc::ByteBuffer request_buffer(&slice, 1), response_buffer;
    std::promise<grpc::Status> done;
    stub.UnaryCall(ctx, method, grpc::StubOptions(), &request_buffer, &response_buffer,
                   [&done](grpc::Status s) { done.set_value(std::move(s)); });
    grpc::Status s = done.get_future().get();
    std::vector<grpc::Slice> slices;
    if (s.ok() && response_buffer.Dump(&slices).ok()) {
      for (const auto& sl : slices) {
        reply->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
      }
    }
    return s;
  }

  // Reads the token and TLS files; returns the channel credentials (insecure without TLS), or
  // sets setup_error.
  std::shared_ptr<grpc::ChannelCredentials> AccessSetup() {
    FromEnv(&options.token_file, "COOPD_TOKEN_FILE");
    FromEnv(&options.tls_ca_file, "COOPD_TLS_CA");
    FromEnv(&options.tls_cert_file, "COOPD_TLS_CERT");
    FromEnv(&options.tls_key_file, "COOPD_TLS_KEY");
    FromEnv(&options.socket_owner, "COOPD_SOCKET_OWNER");
    std::string error;
    auto fail = [this](std::string message) {
      Error e;
      e.code = ErrorCode::kInvalidArgument;
      e.message = std::move(message);
      setup_error = std::move(e);
      return grpc::InsecureChannelCredentials();
    };
    socket_owner_uid = coop::ParseOwner(options.socket_owner, &error);
    if (!error.empty()) return fail(error);
    if (!options.token_file.empty()) {
      auto text =
          ReadOptionFile(options.token_file, "token_file", "COOPD_TOKEN_FILE", true, &error);
      if (!text) return fail(error);
      auto token = TokenOf(*text);
      if (!token) {
        return fail("ClientOptions::token_file (COOPD_TOKEN_FILE) \"" + options.token_file +
                    "\": holds no token (its first line that is not empty or a # comment)");
      }
      authorization = "Bearer " + *token;
    }
    const bool tls = !options.tls_ca_file.empty() || !options.tls_cert_file.empty() ||
                     !options.tls_key_file.empty();
    if (!tls || options.target.empty()) return grpc::InsecureChannelCredentials();
    if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
      return fail(
          "ClientOptions::tls_cert_file and tls_key_file (COOPD_TLS_CERT, COOPD_TLS_KEY) go "
          "together; one of them is missing");
    }
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      auto ca = ReadOptionFile(options.tls_ca_file, "tls_ca_file", "COOPD_TLS_CA", false, &error);
      if (!ca) return fail(error);
      ssl.pem_root_certs = *ca;
    }
    if (!options.tls_cert_file.empty()) {
      auto cert =
          ReadOptionFile(options.tls_cert_file, "tls_cert_file", "COOPD_TLS_CERT", false, &error);
      if (!cert) return fail(error);
      auto key =
          ReadOptionFile(options.tls_key_file, "tls_key_file", "COOPD_TLS_KEY", true, &error);
      if (!key) return fail(error);
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    return grpc::SslCredentials(ssl);
  }

  // "" when a daemon was started (now or by an earlier call of this client): the caller then
  // waits for it. Otherwise why not, for the error message.
  std::string Autostart() {
    if (!options.target.empty()) return "(auto-start is off for a gRPC target)";
    if (!options.autostart) return "(auto-start is off for this client)";
    if (const char* off = std::getenv("COOPD_NO_AUTOSTART");
        off != nullptr && *off != '\0' && std::string(off) != "0") {
      return "(auto-start is off: COOPD_NO_AUTOSTART is set)";
    }
    std::lock_guard<std::mutex> lock(autostart_mu);
    if (autostart_tried) return "";
    autostart_tried = true;
    const std::string binary = FindCoopdBinary(options.coopd_binary);
    if (binary.empty()) {
      return "(auto-start: no coopd binary in COOPD_BIN, next to the client library or program, or "
             "on PATH)";
    }
    std::string error;
    if (!SpawnDaemon(binary, options.socket_path, &error)) {
      return "(auto-start: could not start " + binary + (error.empty() ? "" : ": " + error) + ")";
    }
    return "";
  }
};

Bytes::Bytes(std::string bytes) {
  if (bytes.empty()) return;
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  view_ = *owned;
  owner_ = std::move(owned);
}

void PrintTo(const Bytes& bytes, std::ostream* out) {
  static const char kHex[] = "0123456789abcdef";
  std::string head;
  for (size_t i = 0; i < bytes.size() && i < 16; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    head += kHex[c >> 4];
    head += kHex[c & 15];
  }
  *out << "Bytes(" << bytes.size() << " bytes" << (bytes.empty() ? "" : ": ") << head
       << (bytes.size() > 16 ? "...)" : ")");
}

Client::Client() : Client(ClientOptions{}) {}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.socket_path.empty()) options.socket_path = DefaultSocketPath();
  FromEnv(&options.target, "COOPD_TARGET");
  impl_->options = std::move(options);
  impl_->artifacts = std::make_unique<internal::ArtifactCache>(
      impl_->options.artifact_cache_entries, impl_->options.artifact_cache_bytes);
  std::shared_ptr<grpc::ChannelCredentials> credentials = impl_->AccessSetup();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  // The whole message of an error travels in the trailing metadata (status details).
  if (impl_->options.full_errors) args.SetInt(GRPC_ARG_MAX_METADATA_SIZE, 64 << 20);
  // coopd is local: reconnect quickly after it (re)starts instead of gRPC's default backoff of
  // up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::string target = "unix:" + impl_->options.socket_path;
  if (!impl_->options.target.empty()) {
    // Replicas: every address the target resolves to (dns:/// gives all of a name's A records,
    // a Kubernetes headless Service's pods), requests spread over them by gRPC's round_robin.
    target = impl_->options.target;
    args.SetLoadBalancingPolicyName("round_robin");
  }
  impl_->channel = grpc::CreateCustomChannel(target, credentials, args);
  impl_->stub = v1::Coop::NewStub(impl_->channel);
  impl_->specialize_method = std::make_unique<grpc::internal::RpcMethod>(
      "/coop.v1.Coop/Specialize", grpc::internal::RpcMethod::NORMAL_RPC, impl_->channel);
  impl_->bundle_method = std::make_unique<grpc::internal::RpcMethod>(
      "/coop.v1.Coop/SpecializeBundle", grpc::internal::RpcMethod::NORMAL_RPC, impl_->channel);
}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const std::string& Client::socket_path() const {
  return impl_->options.socket_path;
}

namespace {

Origin FromProto(v1::Origin o) {
  switch (o) {
    case v1::ORIGIN_COMPILED:
      return Origin::kCompiled;
    case v1::ORIGIN_MEMORY:
      return Origin::kMemory;
    case v1::ORIGIN_DISK:
      return Origin::kDisk;
    case v1::ORIGIN_REMOTE:
      return Origin::kRemote;
    default:
      return Origin::kUnspecified;
  }
}

// Bytes over a string that `owner` holds (no copy); empty without keeping `owner`.
Bytes Share(const std::shared_ptr<const void>& owner, const std::string& bytes) {
  return bytes.empty() ? Bytes() : Bytes(owner, bytes);
}

// The artifact of a reply: the metadata copied, the large fields (LTO-IR, bitcode, link inputs)
// shared with the reply (or with the held reply a digest-only one was filled from).
Artifact FromReply(const std::shared_ptr<const internal::Reply>& reply) {
  const v1::Artifact& a = reply->artifact;
  const internal::Reply& held = reply->bytes();
  const std::shared_ptr<const void> owner =
      reply->bytes_from ? std::shared_ptr<const void>(reply->bytes_from) : reply;
  // A digest-only reply leaves out what the key fixes (SpecializeResponse's bytes_omitted):
  // that comes from the held reply, the rest (origin, timings, choices) from this one.
  const v1::Artifact& content = held.artifact;
  Artifact out;
  out.key = a.key();
  out.ltoir = held.ltoir;
  for (const auto& e : content.entries())
    out.entries.push_back({e.symbol(), e.declaration(), e.description()});
  out.temp_storage_bytes = a.temp_storage().bytes();
  out.temp_storage_align = a.temp_storage().align();
  out.arch = a.arch();
  out.toolchain = FromProto(content.toolchain());
  out.spec = FromProto(content.spec());
  out.compile_ms = a.compile_ms();
  out.compile_log = content.compile_log();
  out.source = content.source();
  out.origin = FromProto(a.origin());
  for (int i = 0; i < a.parts_size(); ++i) {
    const auto& p = a.parts(i);
    const auto& fixed = i < content.parts_size() ? content.parts(i) : p;
    ArtifactPart part;
    part.spec = FromProto(fixed.spec());
    for (const auto& e : fixed.entries()) {
      part.entries.push_back({e.symbol(), e.declaration(), e.description()});
    }
    part.temp_storage_bytes = p.temp_storage().bytes();
    part.temp_storage_align = p.temp_storage().align();
    part.algorithm_choice = FromProto(p.algorithm_choice());
    out.parts.push_back(std::move(part));
  }
  out.pch_status = a.pch_status();
  out.layout_ms = a.layout_ms();
  for (int i = 0; i < a.link_inputs_size(); ++i) {
    const auto& in = a.link_inputs(i);
    const auto& in_bytes = i < content.link_inputs_size() ? content.link_inputs(i) : in;
    out.link_inputs.push_back({in.symbol(), in.key(), Share(owner, in_bytes.ltoir()),
                               Share(owner, in_bytes.bitcode()), in.bitcode_key()});
  }
  out.type_definitions = content.type_definitions();
  out.algorithm_choice = FromProto(a.algorithm_choice());
  const auto& b = a.bitcode();
  out.bitcode = {b.key(),        Share(owner, content.bitcode().data()), FromProto(b.origin()),
                 b.compile_ms(), content.bitcode().compile_log(),        b.pch_status()};
  return out;
}

template <class Request>
void SetFormats(Formats formats, Request* req) {
  if (formats != Formats::kBitcode) req->add_formats(v1::FORMAT_LTOIR);
  if (formats != Formats::kLtoIr) req->add_formats(v1::FORMAT_BITCODE);
}

}  // namespace

Result<Artifact> Client::Specialize(const Spec& spec, Formats formats) {
  if (auto e = CheckFamilyOptions(spec, "spec")) return *e;
  v1::SpecializeRequest req;
  *req.mutable_spec() = ToProto(spec);
  SetFormats(formats, &req);
  std::shared_ptr<const internal::Reply> reply;
  if (auto e = impl_->SpecializeCached(*impl_->specialize_method, std::move(req), &reply)) {
    return *e;
  }
  return FromReply(reply);
}

Result<Artifact> Client::SpecializeBundle(const std::vector<Spec>& specs, Formats formats) {
  v1::SpecializeBundleRequest req;
  SetFormats(formats, &req);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (auto e = CheckFamilyOptions(specs[i], "specs[" + std::to_string(i) + "]")) return *e;
    *req.add_specs() = ToProto(specs[i]);
  }
  std::shared_ptr<const internal::Reply> reply;
  if (auto e = impl_->SpecializeCached(*impl_->bundle_method, std::move(req), &reply)) {
    return *e;
  }
  return FromReply(reply);
}

Result<LinkResult> Client::Link(const LinkRequest& request) {
  v1::LinkRequest req;
  req.set_arch(request.arch);
  for (const auto& m : request.modules) {
    auto* pm = req.add_modules();
    pm->set_kind(m.kind == LinkInputKind::kPtx ? v1::LinkModule::KIND_PTX
                                               : v1::LinkModule::KIND_LTOIR);
    pm->set_name(m.name);
    pm->set_data(m.data);
  }
  for (const auto& k : request.artifact_keys) req.add_artifact_keys(k);
  for (const auto& o : request.options) req.add_options(o);
  req.set_keep_unused_variables(request.keep_unused_variables);
  req.set_client(impl_->options.client_name);
  v1::LinkResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Link, req, &resp)) return *e;
  LinkResult out;
  out.cubin = resp.cubin();
  out.key = resp.key();
  out.origin = FromProto(resp.origin());
  out.link_ms = resp.link_ms();
  out.options.assign(resp.options().begin(), resp.options().end());
  return out;
}

namespace {

Stats FromProto(const v1::Stats& resp) {
  Stats out;
  out.requests = resp.requests();
  out.invalid_requests = resp.invalid_requests();
  out.memory_hits = resp.memory_hits();
  out.disk_hits = resp.disk_hits();
  out.misses = resp.misses();
  out.compiles = resp.compiles();
  out.compile_failures = resp.compile_failures();
  out.compile_ms_total = resp.compile_ms_total();
  out.memory_entries = resp.memory_entries();
  out.memory_bytes = resp.memory_bytes();
  out.disk_entries = resp.disk_entries();
  out.disk_bytes = resp.disk_bytes();
  out.disk_write_failures = resp.disk_write_failures();
  out.uptime_s = resp.uptime_s();
  out.toolchain = FromProto(resp.toolchain());
  out.cache_path = resp.cache_path();
  out.pch_warm_compiles = resp.pch_warm_compiles();
  out.joined_requests = resp.joined_requests();
  out.worker_restarts = resp.worker_restarts();
  out.worker_crashes = resp.worker_crashes();
  out.compile_timeouts = resp.compile_timeouts();
  out.queue_depth = resp.queue_depth();
  out.workers = resp.workers();
  out.workers_busy = resp.workers_busy();
  out.compile_ms_p50 = resp.compile_ms_p50();
  out.compile_ms_p90 = resp.compile_ms_p90();
  out.compile_ms_p99 = resp.compile_ms_p99();
  for (const auto& w : resp.worker_status()) {
    out.worker_status.push_back({w.pid(), w.busy(), w.jobs(), w.header_set()});
  }
  out.links = resp.links();
  out.link_failures = resp.link_failures();
  out.link_hits = resp.link_hits();
  out.bundles = resp.bundles();
  for (const auto& t : resp.tiers()) {
    out.tiers.push_back({t.name(), t.hits(), t.misses(), t.entries(), t.bytes(), t.raw_bytes(),
                         t.budget_bytes(), t.evictions(), t.corruptions(), t.write_failures(),
                         t.degraded(), t.evicting()});
  }
  out.corruptions = resp.corruptions();
  out.evictions = resp.evictions();
  out.cache_degraded = resp.cache_degraded();
  out.bitcode_compiles = resp.bitcode_compiles();
  out.remote_hits = resp.remote_hits();
  if (resp.has_remote()) {
    const auto& r = resp.remote();
    out.remote.configured = true;
    out.remote.url = r.url();
    out.remote.cluster = r.cluster();
    out.remote.read_only = r.read_only();
    out.remote.healthy = r.healthy();
    out.remote.hits = r.hits();
    out.remote.misses = r.misses();
    out.remote.errors = r.errors();
    out.remote.timeouts = r.timeouts();
    out.remote.reconnects = r.reconnects();
    out.remote.corruptions = r.corruptions();
    out.remote.writes = r.writes();
    out.remote.write_failures = r.write_failures();
    out.remote.writes_skipped = r.writes_skipped();
    out.remote.writes_dropped = r.writes_dropped();
    out.remote.redirects = r.redirects();
    out.remote.slot_refreshes = r.slot_refreshes();
    out.remote.leases_acquired = r.leases_acquired();
    out.remote.lease_waits = r.lease_waits();
    out.remote.lease_wait_hits = r.lease_wait_hits();
    out.remote.lease_wait_timeouts = r.lease_wait_timeouts();
    out.remote.lease_takeovers = r.lease_takeovers();
    out.remote.leases_lost = r.leases_lost();
  }
  for (const auto& l : resp.listeners()) {
    out.listeners.push_back(
        {l.address(), l.tls(), l.client_certificates(), l.tokens(), l.insecure(), l.mode()});
  }
  out.unauthenticated_calls = resp.unauthenticated_calls();
  out.denied_calls = resp.denied_calls();
  out.client_in_flight_refusals = resp.client_in_flight_refusals();
  out.client_rate_refusals = resp.client_rate_refusals();
  out.undecodable_requests = resp.undecodable_requests();
  out.oversized_requests = resp.oversized_requests();
  out.requests_cancelled = resp.requests_cancelled();
  out.compiles_cancelled = resp.compiles_cancelled();
  out.quota_compile_refusals = resp.quota_compile_refusals();
  out.quota_bytes_refusals = resp.quota_bytes_refusals();
  for (const auto& t : resp.tuning_tables()) {
    out.tuning_tables.push_back(
        {t.arch(), t.version(), t.digest(), t.source(), t.device(), t.cells(), t.placeholder()});
  }
  out.tuning_digest = resp.tuning_digest();
  out.auto_resolutions = resp.auto_resolutions();
  out.memo_hits = resp.memo_hits();
  out.memo_misses = resp.memo_misses();
  out.memo_entries = resp.memo_entries();
  out.memo_evictions = resp.memo_evictions();
  out.digest_only_replies = resp.digest_only_replies();
  out.bytes_omitted = resp.bytes_omitted();
  return out;
}

v1::CacheFilter ToProto(const CacheFilter& f) {
  v1::CacheFilter out;
  out.set_family(f.family);
  out.set_dtype(f.dtype);
  out.set_arch(f.arch);
  return out;
}

}  // namespace

Result<Stats> Client::GetStats() {
  v1::Stats resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::GetStats, v1::GetStatsRequest(), &resp)) return *e;
  return FromProto(resp);
}

Result<Stats> Client::ResetStats() {
  v1::Stats resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::ResetStats, v1::GetStatsRequest(), &resp)) return *e;
  return FromProto(resp);
}

Result<Explanation> Client::Explain(const Spec& spec, Formats format) {
  if (auto e = CheckFamilyOptions(spec, "spec")) return *e;
  v1::SpecializeRequest req;
  *req.mutable_spec() = ToProto(spec);
  SetFormats(format, &req);
  req.set_client(impl_->options.client_name);
  v1::ExplainResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Explain, req, &resp)) return *e;
  Explanation out;
  out.key = resp.key();
  out.cached = resp.cached();
  for (const auto& c : resp.components())
    out.components.push_back({c.name(), c.value(), c.digest()});
  for (const auto& o : resp.others()) {
    out.others.push_back({o.key(),
                          std::vector<std::string>(o.differing().begin(), o.differing().end()),
                          o.created_at()});
  }
  if (resp.has_auto_choice()) {
    const v1::AutoExplanation& a = resp.auto_choice();
    AutoExplanation x;
    x.choice = FromProto(a.choice());
    x.eligible.assign(a.eligible().begin(), a.eligible().end());
    x.filtered_out.assign(a.filtered_out().begin(), a.filtered_out().end());
    x.baseline = a.baseline();
    x.dtype_size = a.dtype_size();
    x.threads = a.threads();
    x.items_per_thread = a.items_per_thread();
    x.measured_method = a.measured_method();
    x.table_arch = a.table_arch();
    x.rule = a.rule();
    x.cell_family = a.cell().family();
    x.cell_method = a.cell().method();
    x.cell_run = a.cell().run();
    x.cell_choice = a.cell().choice();
    x.cell_dtype_size = a.cell().dtype_size();
    x.cell_threads = a.cell().threads();
    x.cell_items_per_thread = a.cell().items_per_thread();
    x.distance = a.distance();
    for (const auto& m : a.measured()) {
      x.measured.push_back(
          {m.algorithm(), m.median_gbps(), m.min_gbps(), m.max_gbps(), m.n(), m.eligible()});
    }
    out.auto_choice = std::move(x);
  }
  return out;
}

Result<std::vector<CacheEntry>> Client::ListEntries(const CacheFilter& filter, uint32_t limit,
                                                    bool with_specs) {
  v1::ListEntriesRequest req;
  *req.mutable_filter() = ToProto(filter);
  req.set_limit(limit);
  req.set_with_specs(with_specs);
  v1::ListEntriesResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::ListEntries, req, &resp)) return *e;
  std::vector<CacheEntry> out;
  for (const auto& e : resp.entries()) {
    CacheEntry entry;
    entry.key = e.key();
    entry.family = e.family();
    entry.dtype = e.dtype();
    entry.arch = e.arch();
    entry.raw_bytes = e.raw_bytes();
    entry.stored_bytes = e.stored_bytes();
    entry.created_at = e.created_at();
    entry.last_access = e.last_access();
    for (const auto& s : e.specs()) entry.specs.push_back(FromProto(s));
    entry.format = e.format() == v1::FORMAT_BITCODE ? Formats::kBitcode : Formats::kLtoIr;
    out.push_back(std::move(entry));
  }
  return out;
}

Result<uint64_t> Client::Purge(const CacheFilter& filter, bool all) {
  v1::PurgeRequest req;
  *req.mutable_filter() = ToProto(filter);
  req.set_all(all);
  v1::PurgeResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Purge, req, &resp)) return *e;
  return resp.entries_removed();
}

Result<VerifyReport> Client::Verify() {
  v1::VerifyResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Verify, v1::VerifyRequest(), &resp)) return *e;
  return VerifyReport{resp.entries_checked(), resp.blobs_checked(), resp.bad_removed(),
                      std::vector<std::string>(resp.bad_keys().begin(), resp.bad_keys().end()),
                      resp.totals_corrected()};
}

Result<Catalog> Client::GetCatalog() {
  v1::CatalogResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Catalog, v1::CatalogRequest(), &resp)) return *e;
  auto strings = [](const auto& field) {
    return std::vector<std::string>(field.begin(), field.end());
  };
  Catalog out;
  for (const auto& f : resp.families()) {
    CatalogFamily family;
    family.name = f.name();
    family.description = f.description();
    for (const auto& m : f.methods())
      family.methods.push_back({m.name(), m.needs_op(), m.description(), m.op_kind()});
    family.algorithms = strings(f.algorithms());
    family.default_algorithm = f.default_algorithm();
    family.warp = f.warp();
    family.max_items_per_thread = f.max_items_per_thread();
    family.scan_options = f.scan_options();
    family.warp_multiple_algorithms = strings(f.warp_multiple_algorithms());
    family.exchange_options = f.exchange_options();
    family.family_options = f.family_options();
    family.dtypes = strings(f.dtypes());
    family.power_of_two_threads = f.power_of_two_threads();
    family.available = f.available();
    family.requires = f.requires();
    family.auto_algorithms = strings(f.auto_algorithms());
    family.auto_baseline = f.auto_baseline();
    family.auto_measured_method = f.auto_measured_method();
    out.families.push_back(std::move(family));
  }
  out.dtypes = strings(resp.dtypes());
  out.builtin_ops = strings(resp.builtin_ops());
  for (const auto& k : resp.op_kinds()) {
    out.op_kinds.push_back({k.name(), k.signature(), strings(k.builtins())});
  }
  out.archs = strings(resp.archs());
  out.calling_conventions = strings(resp.calling_conventions());
  out.bitcode_archs = strings(resp.bitcode_archs());
  out.bitcode_unavailable = resp.bitcode_unavailable();
  return out;
}

Result<VacuumReport> Client::Vacuum() {
  v1::VacuumResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Vacuum, v1::VacuumRequest(), &resp)) return *e;
  return VacuumReport{resp.file_bytes_before(), resp.file_bytes_after()};
}

const char* HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kServing:
      return "SERVING";
    case HealthStatus::kNotServing:
      return "NOT_SERVING";
    case HealthStatus::kServiceUnknown:
      return "SERVICE_UNKNOWN";
    case HealthStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

namespace {

// grpc.health.v1's two messages on the wire. The client encodes them itself rather than linking
// generated code for health.proto: a frontend that embeds this library may link its own copy
// of that code, and protobuf aborts a process that registers one .proto file twice.
//   HealthCheckRequest  { string service = 1; }   HealthCheckResponse { ServingStatus status = 1; }
std::string EncodeHealthRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;  // proto3: the default is not written
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  google::protobuf::internal::WireFormatLite::WriteString(1, service, &coded);
  coded.Trim();
  return out;
}

// The status field of a HealthCheckResponse; nullopt when the bytes are not one.
std::optional<int> DecodeHealthStatus(const std::string& in) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream coded(reinterpret_cast<const uint8_t*>(in.data()),
                                               static_cast<int>(in.size()));
  int status = 0;  // proto3: an absent field is UNKNOWN
  while (const uint32_t tag = coded.ReadTag()) {
    if (tag == WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_VARINT)) {
      uint32_t v = 0;
      if (!coded.ReadVarint32(&v)) return std::nullopt;
      status = static_cast<int>(v);
    } else if (!WireFormatLite::SkipField(&coded, tag)) {
      return std::nullopt;
    }
  }
  if (!coded.ConsumedEntireMessage()) return std::nullopt;
  return status;
}

}  // namespace

Result<HealthStatus> Client::Health(const std::string& service) {
  if (impl_->setup_error) return *impl_->setup_error;
  if (auto e = impl_->CheckSocket()) return *e;
  grpc::ClientContext ctx;
  std::string bytes;
  const grpc::Status s = impl_->GenericCall("/grpc.health.v1.Health/Check",
                                            EncodeHealthRequest(service), &ctx, &bytes);
  if (!s.ok()) {
    Error e = FromGrpc(s, ctx, impl_->where());
    // The health service is gRPC's own: its answers carry no coopd trailer.
    if (e.code != ErrorCode::kUnavailable) e.from_server = true;
    if (e.code == ErrorCode::kNotFound) {
      e.message = "coopd has no service \"" + service + "\" (ask for \"\" or \"coop.v1.Coop\")";
    }
    return e;
  }
  const std::optional<int> status = DecodeHealthStatus(bytes);
  if (!status || *status < 0 || *status > 3) {
    Error e;
    e.code = ErrorCode::kInternal;
    e.message = "the health service's answer is not a HealthCheckResponse";
    e.from_server = true;
    return e;
  }
  return static_cast<HealthStatus>(*status);
}

Result<bool> Client::Stop() {
  if (impl_->setup_error) return *impl_->setup_error;
  if (auto e = impl_->CheckSocket()) return *e;
  grpc::ClientContext ctx;
  std::string reply;
  // Served outside coop.proto (server/rpc/stop_service.h): an empty request and reply.
  const grpc::Status s = impl_->GenericCall("/coop.v1.Lifecycle/Stop", "", &ctx, &reply);
  if (!s.ok()) {
    Error e = FromGrpc(s, ctx, impl_->where());
    if (e.code == ErrorCode::kUnimplemented) {
      e.message =
          "this coopd has no Stop call (it is older than coopctl stop): stop it with "
          "SIGTERM or systemctl stop";
    }
    return e;
  }
  return true;
}

std::optional<Error> ClientAccess::Specialize(Client& client, v1::SpecializeRequest request,
                                              v1::SpecializeResponse* response) {
  return client.impl_->SpecializeToMessage(*client.impl_->specialize_method, std::move(request),
                                           response);
}

std::optional<Error> ClientAccess::SpecializeBundle(Client& client,
                                                    v1::SpecializeBundleRequest request,
                                                    v1::SpecializeResponse* response) {
  return client.impl_->SpecializeToMessage(*client.impl_->bundle_method, std::move(request),
                                           response);
}

std::optional<Error> ClientAccess::Link(Client& client, v1::LinkRequest request,
                                        v1::LinkResponse* response) {
  request.set_client(client.impl_->options.client_name);
  return client.impl_->Unary(&v1::Coop::Stub::Link, request, response);
}

std::optional<Error> ClientAccess::Catalog(Client& client, v1::CatalogResponse* response) {
  return client.impl_->Unary(&v1::Coop::Stub::Catalog, v1::CatalogRequest(), response);
}

std::optional<Error> ClientAccess::GetStats(Client& client, v1::Stats* response) {
  return client.impl_->Unary(&v1::Coop::Stub::GetStats, v1::GetStatsRequest(), response);
}

}  // namespace coop

namespace coop {
namespace {

PlanRegion FromProto(const v1::PlanRegion& r) {
  return {r.name(),  r.offset(), r.bytes(), r.align(), r.padding(),
          r.count(), r.stride(), r.first(), r.last(),  r.artifact_key()};
}

}  // namespace

const PlanRegion* PlanResult::Find(const std::string& name) const {
  for (const auto* list : {&uses, &reservations}) {
    for (const PlanRegion& r : *list) {
      if (r.name == name) return &r;
    }
  }
  return nullptr;
}

Result<PlanResult> Client::Plan(const PlanRequest& request) {
  v1::PlanRequest req;
  for (const PlanUse& u : request.uses) {
    v1::PlanUse* pu = req.add_uses();
    pu->set_name(u.name);
    if (u.spec) {
      if (auto e = CheckFamilyOptions(
              *u.spec, "uses[" + std::to_string(req.uses_size() - 1) + "] \"" + u.name + "\"")) {
        return *e;
      }
      *pu->mutable_spec() = ToProto(*u.spec);
    } else {
      pu->mutable_temp_storage()->set_bytes(u.bytes);
      pu->mutable_temp_storage()->set_align(u.align);
    }
    pu->set_first(u.first);
    pu->set_last(u.last);
    pu->set_count(u.count);
  }
  for (const PlanReservation& r : request.reservations) {
    v1::PlanReservation* pr = req.add_reservations();
    pr->set_name(r.name);
    pr->set_bytes(r.bytes);
    pr->set_align(r.align);
    pr->set_count(r.count);
  }
  req.set_base_offset(request.base_offset);
  req.set_client(impl_->options.client_name);
  v1::PlanResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Plan, req, &resp)) return *e;
  PlanResult out;
  for (const auto& r : resp.reservations()) out.reservations.push_back(FromProto(r));
  for (const auto& r : resp.uses()) out.uses.push_back(FromProto(r));
  out.dynamic_shared_bytes = resp.dynamic_shared_bytes();
  out.base_align = resp.base_align();
  out.reserved_bytes = resp.reserved_bytes();
  out.no_reuse_bytes = resp.no_reuse_bytes();
  return out;
}

}  // namespace coop

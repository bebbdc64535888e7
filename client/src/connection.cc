// connection.cc: coop::Client's connection to coopd: the constructor (options from the
// environment, the token and TLS files, the channel), auto-start (finding the coopd binary and
// starting it detached), the generic calls, and a failed call's status as a coop::Error.
#include <dlfcn.h>
#include <fcntl.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <string_view>

#include "artifact_cache.h"
#include "client_impl.h"
#include "coop/client.h"
#include "coop/paths.h"

namespace coop {
namespace {

// coopd marks every status it produces itself with this trailing metadata (server/
// grpc_service.cc); a status without it came from the client's gRPC library (the transport).
constexpr char kStatusOriginKey[] = "coopd-status";
constexpr char kStatusOriginServer[] = "server";
// The type of the detail that carries the whole message of a bounded error
// (server/rpc/grpc_service.h).
constexpr char kErrorDetailTypeUrl[] = "type.googleapis.com/coop.v1.ErrorDetail";
// The trailing metadata that carries the call's request id (server/rpc/grpc_service.h).
constexpr char kRequestIdKey[] = "x-request-id";

bool FromServer(const grpc::ClientContext& ctx) {
  const auto& trailers = ctx.GetServerTrailingMetadata();
  auto it = trailers.find(kStatusOriginKey);
  return it != trailers.end() &&
         std::string_view(it->second.data(), it->second.size()) == kStatusOriginServer;
}

}  // namespace

namespace internal {

std::string ClientMetadata(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 48)) out += c >= 0x20 && c <= 0x7E ? c : '?';
  return out + "/" + std::to_string(getpid());
}

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

}  // namespace internal

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
  std::string why;
  std::optional<std::string> text = ReadSmallFile(path, secret ? "a secret" : nullptr, &why);
  if (!text) {
    *error = std::string("ClientOptions::") + field + " (" + env + ") \"" + path + "\": " + why;
  }
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

grpc::Status Client::Impl::GenericCall(const char* method, const std::string& request,
                                       grpc::ClientContext* ctx, std::string* reply) {
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

std::shared_ptr<grpc::ChannelCredentials> Client::Impl::AccessSetup() {
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
    auto text = ReadOptionFile(options.token_file, "token_file", "COOPD_TOKEN_FILE", true, &error);
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
    auto key = ReadOptionFile(options.tls_key_file, "tls_key_file", "COOPD_TLS_KEY", true, &error);
    if (!key) return fail(error);
    ssl.pem_cert_chain = *cert;
    ssl.pem_private_key = *key;
  }
  return grpc::SslCredentials(ssl);
}

std::string Client::Impl::Autostart() {
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

}  // namespace coop

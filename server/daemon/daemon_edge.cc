// daemon_edge.cc: RunDaemon's gRPC edge: who may call (bearer tokens, TLS credentials), the gRPC
// server and its listeners (the Unix socket's mode and group, each TCP port's security, logged),
// the metrics endpoint, and the limits' log line.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "server/daemon/daemon_internal.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

// The name of coopd's gRPC service, for health checks (proto/coop/v1/coop.proto).
constexpr char kCoopServiceName[] = "coop.v1.Coop";

// "2 read, 1 admin": how many tokens of each role (never a token).
std::string TokenSummary(const std::vector<TokenEntry>& tokens) {
  std::string out;
  for (Role r : {Role::kRead, Role::kCompile, Role::kAdmin}) {
    const auto n = std::count_if(tokens.begin(), tokens.end(),
                                 [r](const TokenEntry& e) { return e.role == r; });
    if (n > 0) out += StrCat(out.empty() ? "" : ", ", n, " ", RoleName(r));
  }
  return out;
}

// Builds the server, its services and its limits, and starts it listening.
absl::Status BuildAndStartServer(const DaemonConfig& config, const DaemonSocket& socket,
                                 const AccessControl& access,
                                 const std::shared_ptr<grpc::ServerCredentials>& tcp_credentials,
                                 CoopService* grpc_service, RpcEdge* edge) {
  // We hold the lock, so a socket file left here belongs to a coopd that is gone.
  if (!socket.activated) unlink(config.socket_path.c_str());
  // grpc.health.v1 and server reflection, for grpcurl, grpc_health_probe and other generic
  // clients; both must be switched on before the builder exists.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  edge->builder = std::make_unique<grpc::ServerBuilder>();
  grpc::ServerBuilder& builder = *edge->builder;
  if (!socket.activated) {
    builder.AddListeningPort("unix:" + config.socket_path, grpc::InsecureServerCredentials());
  }
  std::vector<int>& tcp_ports = edge->tcp_ports;
  tcp_ports.assign(config.listen.size(), 0);
  for (size_t i = 0; i < config.listen.size(); ++i) {
    builder.AddListeningPort(config.listen[i], tcp_credentials, &tcp_ports[i]);
  }
  builder.RegisterService(grpc_service);
  // `coopctl stop`: an admin's call stops coopd as SIGTERM does, once its reply has gone out.
  edge->stop_service = std::make_unique<StopService>(&access, [](const Caller& caller) {
    spdlog::info("stop requested{}{}; stopping", caller.name.empty() ? "" : " by ", caller.name);
    kill(getpid(), SIGTERM);
  });
  builder.RegisterCallbackGenericService(edge->stop_service.get());
  // gRPC receives a whole message before any limit applies (its own limit only refuses it
  // then, with a message that names no flag): CoopService checks --max-message-mb itself, so
  // gRPC's limit is the protocol's, 4 GiB (docs/security.md).
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(256 << 20);
  // What one peer may hold (docs/security.md, "Network peers"). gRPC 1.51 takes these per
  // server, so they apply to the Unix socket too: calls in flight per connection (a client
  // queues the rest), the time a connection may take to finish its handshake, and a memory quota
  // for connections' buffers.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(config.max_streams));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(config.handshake_timeout.count()));
  edge->quota = std::make_unique<grpc::ResourceQuota>("coopd");
  if (config.grpc_memory_bytes > 0) {
    edge->quota->Resize(config.grpc_memory_bytes);
    builder.SetResourceQuota(*edge->quota);
  }
  const mode_t old_umask = umask(0177);  // the socket is created 0600
  edge->server = builder.BuildAndStart();
  umask(old_umask);
  if (!edge->server) return absl::UnavailableError(StrCat("cannot listen on ", socket.listen_name));
  return absl::OkStatus();
}

// Once the server listens: the socket's mode and group, the inherited socket's accept thread,
// each TCP port checked and logged; the listeners as GetStats reports them.
absl::Status SetUpListeners(const DaemonConfig& config, const DaemonSocket& socket,
                            const AccessControl& access, CoopService* grpc_service, RpcEdge* edge) {
  const bool tls = UsesTcpTls(config);
  std::vector<coop::v1::Listener> listeners;
  if (!socket.activated) {
    chmod(config.socket_path.c_str(), 0600);
    coop::v1::Listener unix_listener;
    unix_listener.set_address("unix:" + config.socket_path);
    unix_listener.set_tokens(access.enforced() && config.tokens_unix);
    unix_listener.set_mode("0600");
    if (config.socket_gid >= 0) {
      if (chown(config.socket_path.c_str(), static_cast<uid_t>(-1),
                static_cast<gid_t>(config.socket_gid)) != 0) {
        return absl::FailedPreconditionError(
            StrCat("--socket-group ", config.socket_group, ": cannot give ", config.socket_path,
                   " to the group: ", std::strerror(errno),
                   " (coopd's user must be root or a member of the group)"));
      }
      chmod(config.socket_path.c_str(), 0660);
      unix_listener.set_mode(StrCat("0660 group ", config.socket_group));
    }
    listeners.push_back(std::move(unix_listener));
  }
  if (socket.activated) {
    auto l = InheritedListener::Start(socket.inherited, edge->server.get());
    if (!l.ok()) return l.status();
    edge->inherited_listener = std::move(*l);
  }
  const std::vector<int>& tcp_ports = edge->tcp_ports;
  for (size_t i = 0; i < config.listen.size(); ++i) {
    if (tcp_ports[i] == 0) {
      return absl::UnavailableError(StrCat("--listen: cannot listen on ", config.listen[i]));
    }
    const std::string host = ParseHostPort(config.listen[i]).value_or(HostPort{}).host;
    coop::v1::Listener l;
    l.set_address(StrCat("tcp ", host, ":", tcp_ports[i]));
    l.set_tls(tls);
    l.set_client_certificates(tls && !config.tls_client_ca.empty());
    l.set_tokens(access.enforced());
    l.set_insecure(!tls || (!l.client_certificates() && !l.tokens()));
    if (!tls) {
      spdlog::warn(
          "INSECURE (--insecure): listening on tcp {}:{} WITHOUT TLS{}: anyone on the network "
          "path can read and change requests and artifacts{}; use --tls-cert and --tls-key "
          "(docs/security.md)",
          host, tcp_ports[i], l.tokens() ? "" : " OR AUTHENTICATION",
          l.tokens() ? ", and read the bearer tokens" : ", and anyone who can reach it can use it");
    } else if (l.insecure()) {
      spdlog::warn(
          "INSECURE (--insecure): listening on tcp {}:{} with TLS but WITHOUT CLIENT "
          "AUTHENTICATION: anyone who can reach it can compile, purge and vacuum; use "
          "--tokens-file or --tls-client-ca (docs/security.md)",
          host, tcp_ports[i]);
    } else {
      spdlog::info("listening on tcp {}:{} (TLS{}{})", host, tcp_ports[i],
                   l.client_certificates() ? ", client certificates of " + config.tls_client_ca
                                           : std::string(),
                   l.tokens() ? ", bearer tokens" : "");
    }
    listeners.push_back(std::move(l));
  }
  grpc_service->SetListeners(std::move(listeners));
  edge->server->GetHealthCheckService()->SetServingStatus(kCoopServiceName, true);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<TokenEntry>> LoadTokens(const DaemonConfig& config) {
  std::vector<TokenEntry> tokens;
  if (!config.tokens_file.empty()) {
    auto loaded = LoadTokensFile(config.tokens_file, "--tokens-file");
    if (!loaded.ok()) return loaded.status();
    tokens = std::move(*loaded);
    spdlog::info("access: {} bearer token(s) from {} ({}), required on TCP{}", tokens.size(),
                 config.tokens_file, TokenSummary(tokens),
                 config.tokens_unix ? " and on the Unix socket" : "");
  }
  return tokens;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TcpCredentials(
    const DaemonConfig& config, const AccessControl& access) {
  std::shared_ptr<grpc::ServerCredentials> tcp_credentials = grpc::InsecureServerCredentials();
  if (UsesTcpTls(config)) {
    auto creds = TlsServerCredentials(config.tls_cert, config.tls_key, config.tls_client_ca);
    if (!creds.ok()) return creds.status();
    tcp_credentials = std::move(*creds);
    // Tokens are checked on the headers, before gRPC reads a request (AccessControl::HeaderCheck;
    // gRPC 1.51 runs processors on TLS credentials only).
    if (access.enforced()) tcp_credentials->SetAuthMetadataProcessor(access.HeaderCheck());
  }
  return tcp_credentials;
}

absl::Status StartRpcEdge(const DaemonConfig& config, const DaemonSocket& socket,
                          const AccessControl& access,
                          const std::shared_ptr<grpc::ServerCredentials>& tcp_credentials,
                          CoopService* grpc_service, RpcEdge* edge) {
  if (absl::Status s =
          BuildAndStartServer(config, socket, access, tcp_credentials, grpc_service, edge);
      !s.ok()) {
    return s;
  }
  return SetUpListeners(config, socket, access, grpc_service, edge);
}

absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetrics(const DaemonConfig& config,
                                                            StatsReader& stats_reader) {
  std::unique_ptr<MetricsServer> metrics;
  if (!config.metrics_address.empty()) {
    auto m = MetricsServer::Start(config.metrics_address, &stats_reader);
    if (!m.ok()) return m.status();
    metrics = std::move(*m);
    spdlog::info("metrics: http://{}:{}/metrics",
                 ParseHostPort(config.metrics_address).value_or(HostPort{}).host, metrics->port());
  }
  return metrics;
}

void LogLimits(const DaemonConfig& config) {
  const ClientLimitOptions& cl = config.rpc_limits.clients;
  spdlog::info(
      "limits: messages {} MiB, operator source {} KiB, bundle {} specs, plan {} specs, {} user "
      "operators; per client {} in flight, {}",
      config.rpc_limits.max_message_bytes >> 20, config.request_limits.op_source_bytes >> 10,
      config.request_limits.bundle_specs, config.request_limits.plan_specs,
      config.request_limits.user_ops,
      cl.max_in_flight == 0 ? std::string("unlimited") : std::to_string(cl.max_in_flight),
      cl.rate > 0 ? StrCat(cl.rate, " requests/s (burst ", cl.burst, ")")
                  : std::string("no rate limit"));
  if (config.quotas.compiles_per_minute > 0 || config.quotas.cache_bytes_per_hour > 0) {
    spdlog::info("quotas per client: {} compiles per minute, {} MiB into the cache per hour",
                 config.quotas.compiles_per_minute == 0
                     ? std::string("unlimited")
                     : std::to_string(config.quotas.compiles_per_minute),
                 config.quotas.cache_bytes_per_hour == 0
                     ? std::string("unlimited")
                     : std::to_string(config.quotas.cache_bytes_per_hour >> 20));
  }
}

}  // namespace coopd

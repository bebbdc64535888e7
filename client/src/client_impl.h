// client_impl.h: coop::Client::Impl, what a Client holds (its options, channel, stub and
// artifact cache), and its one call path: the deadline, the metadata, auto-start and the retry
// that waits for the daemon. Shared by the files of the client library (connection.cc sets it
// up and starts coopd, calls.cc makes the calls); not part of the public API.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "artifact_cache.h"
#include "coop/client.h"
#include "coop/paths.h"
#include "coop/v1/coop.grpc.pb.h"
#include "reply_reader.h"

namespace coop {
namespace internal {

// The request metadata that asks coopd for the whole message of a bounded error
// (server/rpc/grpc_service.h).
constexpr char kErrorDetailsKey[] = "coopd-error-details";
// Who this client is, for coopd's per-client limits on the Unix socket (which tells coopd
// nothing about its peer): "<client_name>/<pid>", printable ASCII, at most 64 bytes.
constexpr char kClientMetadataKey[] = "coopd-client";
// kClientMetadataKey's value for a client named `name`.
std::string ClientMetadata(const std::string& name);

// `ctx` is the finished call's context. Only an UNAVAILABLE the transport produced (coopd did
// not answer) says "not reachable"; coopd's own UNAVAILABLE ("retry") keeps its message.
// `socket`: where the call went (the socket path, or the gRPC target).
Error FromGrpc(const grpc::Status& s, const grpc::ClientContext& ctx, const std::string& socket);

}  // namespace internal

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
      if (options.full_errors) ctx.AddMetadata(internal::kErrorDetailsKey, "full");
      ctx.AddMetadata(internal::kClientMetadataKey, internal::ClientMetadata(options.client_name));
      if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
      grpc::Status s = call(&ctx);
      if (s.ok()) return std::nullopt;
      Error e = internal::FromGrpc(s, ctx, where());
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
                           std::string* reply);

  // Reads the token and TLS files; returns the channel credentials (insecure without TLS), or
  // sets setup_error.
  std::shared_ptr<grpc::ChannelCredentials> AccessSetup();

  // "" when a daemon was started (now or by an earlier call of this client): the caller then
  // waits for it. Otherwise why not, for the error message.
  std::string Autostart();
};

}  // namespace coop

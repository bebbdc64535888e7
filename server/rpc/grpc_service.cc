#include "server/rpc/grpc_service.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <random>

#include "server/rpc/reply_writer.h"
#include "server/util/escape.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {

namespace {

// The bytes gRPC's percent-encoding of a status message makes of `c` (grpc-message: printable
// ASCII but '%' stays one byte; anything else becomes %XX).
size_t EncodedBytes(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u <= 0x7E && u != '%' ? 1 : 3;
}

size_t EncodedBytes(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += EncodedBytes(c);
  return n;
}

// protobuf reports why a parse failed (a string field with invalid UTF-8, and which) only to its
// log handler. While a request is parsed, the handler collects that report for the error;
// otherwise it passes protobuf's messages to the daemon's log.
thread_local std::string* parse_report = nullptr;

void ProtobufLogHandler(google::protobuf::LogLevel level, const char* /*file*/, int /*line*/,
                        const std::string& message) {
  if (parse_report != nullptr) {
    if (parse_report->size() < 1024) StrAppend(parse_report, message);
    return;
  }
  if (level >= google::protobuf::LOGLEVEL_ERROR) {
    spdlog::error("protobuf: {}", message);
  } else {
    spdlog::warn("protobuf: {}", message);
  }
}

bool WantsErrorDetails(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(kErrorDetailsKey);
  return it != metadata.end() &&
         std::string_view(it->second.data(), it->second.size()) == kErrorDetailsFull;
}

}  // namespace

absl::Status ParseRequest(const grpc::ByteBuffer& request, size_t max_bytes,
                          google::protobuf::Message* message) {
  const size_t bytes = request.Length();
  // Only errors name the type: its descriptor is not looked up on every call.
  const auto type = [message]() -> const std::string& {
    return message->GetDescriptor()->full_name();
  };
  if (bytes > max_bytes) {
    return absl::ResourceExhaustedError(StrCat("request: ", type(), " of ", bytes,
                                               " bytes is larger than this coopd's limit of ",
                                               max_bytes, " bytes (", max_bytes >> 20,
                                               " MiB; --max-message-mb, "
                                               "COOPD_MAX_MESSAGE_MB)"));
  }
  // The generated handler's parse (grpc::GenericDeserialize): a zero-copy stream over the
  // buffer's slices.
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&request));
  if (!reader.status().ok()) {
    return absl::InvalidArgumentError(
        StrCat("request: cannot read the ", type(), " payload: ", reader.status().error_message()));
  }
  static std::once_flag handler_installed;
  std::call_once(handler_installed, [] { google::protobuf::SetLogHandler(&ProtobufLogHandler); });
  std::string report;
  parse_report = &report;
  const bool parsed = message->ParseFromZeroCopyStream(&reader);
  parse_report = nullptr;
  if (parsed) return absl::OkStatus();
  // protobuf: "String field 'coop.v1.PrimitiveSpec.family' contains invalid UTF-8 data ...".
  constexpr std::string_view kStringField = "String field '";
  if (const size_t at = report.find(kStringField); at != std::string::npos) {
    const size_t start = at + kStringField.size();
    const size_t end = report.find('\'', start);
    if (end != std::string::npos) {
      return absl::InvalidArgumentError(StrCat(
          "request: ", type(), " does not decode: string field ",
          EscapeText(std::string_view(report).substr(start, end - start)),
          " holds invalid UTF-8 (string fields must be UTF-8; bytes belong in bytes fields)"));
    }
  }
  return absl::InvalidArgumentError(
      StrCat("request: ", type(), " does not decode from its ", bytes,
             " bytes: not a well-formed protobuf encoding of it (truncated, corrupt, or another "
             "message)",
             report.empty() ? std::string() : StrCat(" (protobuf: ", LogSafe(report, 200), ")")));
}

std::string ClientIdentity(const grpc::CallbackServerContext& context,
                           std::string_view token_name) {
  if (!token_name.empty()) return StrCat("token:", token_name);
  const std::string peer = context.peer();
  if (peer.rfind("ipv4:", 0) == 0 || peer.rfind("ipv6:", 0) == 0) {
    // The host, not the connection's port: one client's connections share an identity.
    const auto addr = ParseReportedHostPort(std::string_view(peer).substr(5));
    return addr ? StrCat(peer.substr(0, 5), addr->host) : peer;
  }
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kClientMetadataKey);
  if (it == metadata.end() || it->second.empty()) return "unix:(anonymous)";
  const std::string_view name(it->second.data(), std::min<size_t>(it->second.size(), 64));
  return StrCat("unix:", EscapeText(name));
}

std::string StatusSummary(std::string_view message) {
  if (EncodedBytes(message) <= kMaxStatusMessageBytes) return std::string(message);
  // Whole lines while they fit; a first line longer than the budget is cut (at a character
  // boundary: never inside a UTF-8 sequence).
  size_t end = 0, encoded = 0, last_line_end = 0;
  while (end < message.size()) {
    const size_t step = EncodedBytes(message[end]);
    if (encoded + step > kStatusSummaryBytes) break;
    encoded += step;
    if (message[end] == '\n') last_line_end = end;
    ++end;
  }
  if (last_line_end >= kStatusSummaryBytes / 2) {
    end = last_line_end;  // whole lines fill at least half the summary
  } else {
    // A long line (a compiler error quoting a huge string): cut it, but never inside a UTF-8
    // sequence.
    while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) --end;
  }
  return StrCat(message.substr(0, end), "\n... (", message.size() - end, " of ", message.size(),
                " bytes not shown; the whole message is in the status details for a call that "
                "asks for them: coopctl --full-error, coop::ClientOptions::full_errors, "
                "coop_options_set_full_errors, coopd.Client(full_errors=True))");
}

grpc::Status ToGrpcStatus(const absl::Status& status, bool with_details) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode share their numeric values (both follow
  // google.rpc.Code), so the conversion is a cast.
  const auto code = static_cast<grpc::StatusCode>(status.code());
  const std::string_view message(status.message().data(), status.message().size());
  std::string summary = StatusSummary(message);
  if (!with_details || summary.size() == message.size()) return grpc::Status(code, summary);
  coop::v1::StatusDetails details;
  details.set_code(static_cast<int>(code));
  details.set_message(summary);
  coop::v1::ErrorDetail whole;
  whole.set_message(std::string(message));
  auto* any = details.add_details();
  any->set_type_url(kErrorDetailTypeUrl);
  any->set_value(whole.SerializeAsString());
  return grpc::Status(code, std::move(summary), details.SerializeAsString());
}

Executor::Executor(int threads) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
          if (tasks_.empty()) return;  // stopping and drained
          task = std::move(tasks_.front());
          tasks_.pop_front();
        }
        task();
      }
    });
  }
}

Executor::~Executor() {
  Drain();
}

void Executor::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void Executor::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

CoopService::CoopService(coopd::Service* service, Executor* executor, Executor* maintenance,
                         RpcLimits limits, const AccessControl* access)
    : service_(service),
      executor_(executor),
      maintenance_(maintenance),
      limits_(limits),
      clients_(limits.clients),
      access_(access) {
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%08x", static_cast<unsigned>(std::random_device{}()));
  request_id_prefix_ = prefix;
}

bool SaneRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("-_.:/+=@").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string CoopService::RequestId(grpc::CallbackServerContext* context) {
  std::string id;
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(kRequestIdKey);
  const bool given = it != metadata.end();
  const std::string_view theirs =
      given ? std::string_view(it->second.data(), it->second.size()) : std::string_view();
  if (given && SaneRequestId(theirs)) {
    id.assign(theirs.data(), theirs.size());
  } else {
    id = StrCat(request_id_prefix_, "-", next_request_id_++);
    if (given) {
      spdlog::info(
          "[req {}] not using the client's x-request-id {}: it must be 1..{} letters, digits "
          "or -_.:/+=@",
          id, QuoteValue(theirs), kMaxRequestIdBytes);
    }
  }
  context->AddTrailingMetadata(kRequestIdKey, id);
  return id;
}

void CoopService::Reply::Send(grpc::Status status) {
  if (status.ok()) {
    bool own = false;
    status =
        grpc::SerializationTraits<google::protobuf::Message>::Serialize(response(), out_, &own);
  }
  Finish(status);
}

void CoopService::Reply::SendEncoded(grpc::ByteBuffer reply) {
  out_->Swap(&reply);
  Finish(grpc::Status::OK);
}

void CoopService::Reply::Finish(const grpc::Status& status) {
  admission.Release();
  // Every status coopd produces itself carries this trailer, so a client can tell a "retry"
  // from coopd from a transport failure (coop::Error::from_server, client/src/connection.cc). The
  // context stays valid until Finish: gRPC frees it only after the call completes.
  context->AddTrailingMetadata("coopd-status", "server");
  grpc::ServerUnaryReactor* reactor = reactor_;
  delete this;
  reactor->Finish(status);
}

absl::Status CoopService::Parse(const Raw* in, const std::string& request_id,
                                google::protobuf::Message* request) {
  absl::Status s = ParseRequest(*in, limits_.max_message_bytes, request);
  // Freed now, as the generated handler does, not when the call ends.
  const_cast<Raw*>(in)->Clear();
  if (!s.ok()) {
    ++(s.code() == absl::StatusCode::kResourceExhausted ? oversized_ : undecodable_);
    spdlog::info("[req {}] undecodable request: {}", request_id, std::string(s.message()));
  }
  return s;
}

void CoopService::Reactor::OnCancel() {
  // context_ is valid until OnDone.
  if (context_->deadline() <= std::chrono::system_clock::now()) {
    cancel->Cancel(absl::DeadlineExceededError("the caller's deadline passed"));
  } else {
    cancel->Cancel(absl::CancelledError("the caller cancelled the call"));
  }
}

absl::Status CoopService::Admit(Reply* call, const Gate& gate) {
  // 1. Who is calling, and may they call this? Before anything else: a caller without a valid
  // token must not spend a client's rate budget, nor make coopd decode its request.
  std::string token_name;
  if (access_ != nullptr) {
    auto caller = access_->Admit(*call->context, gate.need, gate.rpc);
    if (!caller.ok()) return caller.status();
    call->role = caller->role;
    token_name = std::move(caller->name);
  }
  // 2. The per-client limits, against the token's name when there is one. The quotas (on
  // compiles, which the service counts) are against the same name.
  if (gate.limited && service_->quotas_enabled()) {
    call->scope.client = ClientIdentity(*call->context, token_name);
  }
  if (gate.limited && clients_.enabled()) {
    auto admission =
        clients_.Admit(call->scope.client.empty() ? ClientIdentity(*call->context, token_name)
                                                  : call->scope.client,
                       ClientLimiter::Clock::now());
    if (!admission.ok()) {
      spdlog::info("refused: {}", std::string(admission.status().message()));
      return admission.status();
    }
    call->admission = std::move(*admission);
  }
  return absl::OkStatus();
}

void CoopService::Accept(Reply* call,
                         std::function<void(const std::string& id, Finish finish)> work,
                         Executor* on) {
  if (draining_) {
    call->Send(grpc::Status(grpc::StatusCode::UNAVAILABLE, "coopd is shutting down; retry"));
    return;
  }
  ++in_flight_;
  (on != nullptr ? on : executor_)->Submit([this, call, work = std::move(work)] {
    if (absl::Status why = call->scope.cancel->status(); !why.ok()) {
      // The caller stopped waiting while the call sat in the executor's queue.
      call->Send(ToGrpcStatus(why));
      Touch();
      --in_flight_;
      return;
    }
    work(call->request_id, [this, call](const absl::Status& status) {
      const bool details = WantsErrorDetails(call->context);
      call->Send(ToGrpcStatus(status, details));
      Touch();
      --in_flight_;
    });
  });
}

void CoopService::SpecializeCall(Reply* call, coop::v1::SpecializeResponse* response,
                                 std::vector<coop::v1::PrimitiveSpec> specs, bool bundle,
                                 std::vector<int> formats,
                                 std::vector<coop::v1::HeldArtifact> have) {
  // A repeated request whose artifacts are in memory is answered on this thread: no I/O, and no
  // hop to the executor and back (the largest fixed cost of a hit).
  coopd::Service::MemoProbe probe;
  if (!draining_) {
    auto hit =
        service_->SpecializeFromMemory(specs, bundle, formats, call->request_id, have, &probe);
    if (hit) {
      // The reply as the memo entry keeps it encoded; the LTO-IR and bitcode go out as slices
      // of the memory tier's values, uncopied.
      const auto shared = [](const std::shared_ptr<const CacheValue>& value) {
        return value ? SharedBytes{value, value->blob} : SharedBytes{};
      };
      call->SendEncoded(AssembleSpecializeResponse(hit->head, shared(hit->ltoir),
                                                   hit->bitcode_framing, shared(hit->bitcode)));
      return;
    }
  }
  // Otherwise the whole path on the executor, going on from what the memo said (its key is not
  // computed twice, nor its hit or miss counted twice).
  Accept(call, [this, call, response, specs = std::move(specs), bundle,
                formats = std::move(formats), have = std::move(have),
                probe = std::move(probe)](const std::string& id, Finish finish) mutable {
    service_->Specialize(
        specs, bundle, formats, id,
        [response, finish](absl::StatusOr<coop::v1::Artifact> artifact) {
          if (artifact.ok()) *response->mutable_artifact() = std::move(*artifact);
          finish(artifact.status());
        },
        call->role >= Role::kCompile, have, std::move(probe), call->scope);
  });
}

// Each handler names the role its RPC needs (docs/security.md has the table); Decode checks it
// and the client's limits before decoding the request. Specialize, SpecializeBundle, Link and
// Plan need `read`, and compile or link on a miss only for a caller that has `compile`
// (`may_compile`: a miss is PERMISSION_DENIED for a `read` token).
grpc::ServerUnaryReactor* CoopService::Specialize(grpc::CallbackServerContext* context,
                                                  const Raw* in, Raw* out) {
  using Req = coop::v1::SpecializeRequest;
  using Resp = coop::v1::SpecializeResponse;
  return Decode<Req, Resp>(
      context, in, out, {Role::kRead, "Specialize"}, [this](Call<Req, Resp>* call) {
        // The request's messages move into the call's vectors (nothing reads them there again).
        Req& request = call->request;
        std::vector<coop::v1::PrimitiveSpec> specs(1);
        specs[0].Swap(request.mutable_spec());
        SpecializeCall(call, &call->response_message, std::move(specs), /*bundle=*/false,
                       {request.formats().begin(), request.formats().end()},
                       {std::make_move_iterator(request.mutable_have()->begin()),
                        std::make_move_iterator(request.mutable_have()->end())});
      });
}

grpc::ServerUnaryReactor* CoopService::SpecializeBundle(grpc::CallbackServerContext* context,
                                                        const Raw* in, Raw* out) {
  using Req = coop::v1::SpecializeBundleRequest;
  using Resp = coop::v1::SpecializeResponse;
  return Decode<Req, Resp>(
      context, in, out, {Role::kRead, "SpecializeBundle"}, [this](Call<Req, Resp>* call) {
        Req& request = call->request;
        SpecializeCall(call, &call->response_message,
                       {std::make_move_iterator(request.mutable_specs()->begin()),
                        std::make_move_iterator(request.mutable_specs()->end())},
                       /*bundle=*/true, {request.formats().begin(), request.formats().end()},
                       {std::make_move_iterator(request.mutable_have()->begin()),
                        std::make_move_iterator(request.mutable_have()->end())});
      });
}

grpc::ServerUnaryReactor* CoopService::Link(grpc::CallbackServerContext* context, const Raw* in,
                                            Raw* out) {
  using Req = coop::v1::LinkRequest;
  using Resp = coop::v1::LinkResponse;
  return Decode<Req, Resp>(context, in, out, {Role::kRead, "Link"}, [this](Call<Req, Resp>* call) {
    AcceptAsync(call, [this, call](const std::string& id, auto done) {
      service_->Link(call->request, id, std::move(done), call->role >= Role::kCompile, call->scope);
    });
  });
}

grpc::ServerUnaryReactor* CoopService::Plan(grpc::CallbackServerContext* context, const Raw* in,
                                            Raw* out) {
  using Req = coop::v1::PlanRequest;
  using Resp = coop::v1::PlanResponse;
  return Decode<Req, Resp>(context, in, out, {Role::kRead, "Plan"}, [this](Call<Req, Resp>* call) {
    AcceptAsync(call, [this, call](const std::string& id, auto done) {
      service_->Plan(call->request, id, std::move(done), call->role >= Role::kCompile, call->scope);
    });
  });
}

grpc::ServerUnaryReactor* CoopService::Explain(grpc::CallbackServerContext* context, const Raw* in,
                                               Raw* out) {
  using Req = coop::v1::SpecializeRequest;
  using Resp = coop::v1::ExplainResponse;
  return Decode<Req, Resp>(context, in, out, {Role::kRead, "Explain"},
                           [this](Call<Req, Resp>* call) {
                             AcceptSync(call, [this, call] {
                               const std::vector<int> formats(call->request.formats().begin(),
                                                              call->request.formats().end());
                               return service_->Explain(call->request.spec(), formats);
                             });
                           });
}

grpc::ServerUnaryReactor* CoopService::ResetStats(grpc::CallbackServerContext* context,
                                                  const Raw* in, Raw* out) {
  using Req = coop::v1::GetStatsRequest;
  using Resp = coop::v1::Stats;
  return Decode<Req, Resp>(
      context, in, out, {Role::kAdmin, "ResetStats"}, [this](Call<Req, Resp>* call) {
        AcceptSync(call, [this] { return absl::StatusOr<Resp>(service_->ResetStats()); });
      });
}

grpc::ServerUnaryReactor* CoopService::ListEntries(grpc::CallbackServerContext* context,
                                                   const Raw* in, Raw* out) {
  using Req = coop::v1::ListEntriesRequest;
  using Resp = coop::v1::ListEntriesResponse;
  return Decode<Req, Resp>(
      context, in, out, {Role::kRead, "ListEntries"}, [this](Call<Req, Resp>* call) {
        AcceptSync(call, [this, call] { return service_->ListEntries(call->request); });
      });
}

grpc::ServerUnaryReactor* CoopService::Purge(grpc::CallbackServerContext* context, const Raw* in,
                                             Raw* out) {
  using Req = coop::v1::PurgeRequest;
  using Resp = coop::v1::PurgeResponse;
  return Decode<Req, Resp>(
      context, in, out, {Role::kAdmin, "Purge"}, [this](Call<Req, Resp>* call) {
        AcceptSync(
            call, [this, call] { return service_->Purge(call->request); }, maintenance_);
      });
}

grpc::ServerUnaryReactor* CoopService::Verify(grpc::CallbackServerContext* context, const Raw* in,
                                              Raw* out) {
  using Req = coop::v1::VerifyRequest;
  using Resp = coop::v1::VerifyResponse;
  return Decode<Req, Resp>(context, in, out, {Role::kAdmin, "Verify"},
                           [this](Call<Req, Resp>* call) {
                             AcceptSync(
                                 call, [this] { return service_->Verify(); }, maintenance_);
                           });
}

grpc::ServerUnaryReactor* CoopService::Vacuum(grpc::CallbackServerContext* context, const Raw* in,
                                              Raw* out) {
  using Req = coop::v1::VacuumRequest;
  using Resp = coop::v1::VacuumResponse;
  return Decode<Req, Resp>(context, in, out, {Role::kAdmin, "Vacuum"},
                           [this](Call<Req, Resp>* call) {
                             AcceptSync(
                                 call, [this] { return service_->Vacuum(); }, maintenance_);
                           });
}

// Catalog and GetStats answer on gRPC's thread, outside the per-client limits: they read
// tables and counters, and health checks and probes call them. They still need `read`.
grpc::ServerUnaryReactor* CoopService::Catalog(grpc::CallbackServerContext* context, const Raw* in,
                                               Raw* out) {
  using Req = coop::v1::CatalogRequest;
  using Resp = coop::v1::CatalogResponse;
  return Decode<Req, Resp>(context, in, out, {Role::kRead, "Catalog", /*limited=*/false},
                           [this](Call<Req, Resp>* call) {
                             auto catalog = service_->Catalog(call->request.cccl());
                             if (!catalog.ok()) return call->Send(ToGrpcStatus(catalog.status()));
                             call->response_message = std::move(*catalog);
                             call->Send(grpc::Status::OK);
                           });
}

bool CoopService::WaitIdle(std::chrono::steady_clock::time_point deadline) const {
  while (in_flight_.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

grpc::ServerUnaryReactor* CoopService::GetStats(grpc::CallbackServerContext* context, const Raw* in,
                                                Raw* out) {
  using Req = coop::v1::GetStatsRequest;
  using Resp = coop::v1::Stats;
  return Decode<Req, Resp>(context, in, out, {Role::kRead, "GetStats", /*limited=*/false},
                           [this](Call<Req, Resp>* call) {
                             call->response_message = Stats();
                             call->Send(grpc::Status::OK);
                           });
}

coop::v1::Stats CoopService::Stats() const {
  coop::v1::Stats stats = service_->GetStats();
  for (const auto& l : listeners_) *stats.add_listeners() = l;
  if (access_ != nullptr) {
    stats.set_unauthenticated_calls(access_->unauthenticated());
    stats.set_denied_calls(access_->denied());
  }
  stats.set_client_in_flight_refusals(clients_.refused_in_flight());
  stats.set_client_rate_refusals(clients_.refused_rate());
  stats.set_undecodable_requests(undecodable_.load());
  stats.set_oversized_requests(oversized_.load());
  return stats;
}

}  // namespace coopd

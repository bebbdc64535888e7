#include "server/rpc/grpc_service.h"

#include <spdlog/spdlog.h>

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

bool WantsErrorDetails(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(kErrorDetailsKey);
  return it != metadata.end() &&
         std::string_view(it->second.data(), it->second.size()) == kErrorDetailsFull;
}

}  // namespace

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

grpc::ServerUnaryReactor* CoopService::Accept(grpc::CallbackServerContext* context,
                                              std::function<void(uint64_t id, Finish finish)> work,
                                              Executor* on) {
  auto* reactor = context->DefaultReactor();
  ++in_flight_;
  if (draining_) {
    --in_flight_;
    // Every status coopd produces itself carries this trailer, so a client can tell a "retry"
    // from coopd from a transport failure (coop::Error::from_server, client/src/client.cc).
    context->AddTrailingMetadata("coopd-status", "server");
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "coopd is shutting down; retry"));
    return reactor;
  }
  const uint64_t id = next_request_id_++;
  (on != nullptr ? on : executor_)->Submit([this, context, reactor, id, work = std::move(work)] {
    work(id, [this, context, reactor](const absl::Status& status) {
      --in_flight_;
      // The context stays valid until Finish: gRPC frees it only after the call completes.
      context->AddTrailingMetadata("coopd-status", "server");
      reactor->Finish(ToGrpcStatus(status, WantsErrorDetails(context)));
    });
  });
  return reactor;
}

grpc::ServerUnaryReactor* CoopService::Refuse(grpc::CallbackServerContext* context, Role need,
                                              std::string_view rpc, Role* role) {
  if (access_ == nullptr) {
    if (role != nullptr) *role = Role::kAdmin;
    return nullptr;
  }
  auto caller = access_->Admit(*context, need, rpc);
  if (caller.ok()) {
    if (role != nullptr) *role = caller->role;
    return nullptr;
  }
  auto* reactor = context->DefaultReactor();
  context->AddTrailingMetadata("coopd-status", "server");
  reactor->Finish(ToGrpcStatus(caller.status()));
  return reactor;
}

// Each handler first names the role its RPC needs (docs/security.md has the table). Specialize,
// SpecializeBundle, Link and Plan need `read`, and compile or link on a miss only for a caller
// that has `compile`.
grpc::ServerUnaryReactor* CoopService::Specialize(grpc::CallbackServerContext* context,
                                                  const coop::v1::SpecializeRequest* request,
                                                  coop::v1::SpecializeResponse* response) {
  Role role;
  if (auto* refused = Refuse(context, Role::kRead, "Specialize", &role)) return refused;
  return Accept(context, [this, request, response, role](uint64_t id, Finish finish) {
    const std::vector<int> formats(request->formats().begin(), request->formats().end());
    service_->Specialize(
        {request->spec()}, /*bundle=*/false, formats, id,
        [response, finish](absl::StatusOr<coop::v1::Artifact> artifact) {
          if (artifact.ok()) *response->mutable_artifact() = std::move(*artifact);
          finish(artifact.status());
        },
        role >= Role::kCompile);
  });
}

grpc::ServerUnaryReactor* CoopService::SpecializeBundle(
    grpc::CallbackServerContext* context, const coop::v1::SpecializeBundleRequest* request,
    coop::v1::SpecializeResponse* response) {
  Role role;
  if (auto* refused = Refuse(context, Role::kRead, "SpecializeBundle", &role)) return refused;
  return Accept(context, [this, request, response, role](uint64_t id, Finish finish) {
    std::vector<coop::v1::PrimitiveSpec> specs(request->specs().begin(), request->specs().end());
    const std::vector<int> formats(request->formats().begin(), request->formats().end());
    service_->Specialize(
        specs, /*bundle=*/true, formats, id,
        [response, finish](absl::StatusOr<coop::v1::Artifact> artifact) {
          if (artifact.ok()) *response->mutable_artifact() = std::move(*artifact);
          finish(artifact.status());
        },
        role >= Role::kCompile);
  });
}

grpc::ServerUnaryReactor* CoopService::Link(grpc::CallbackServerContext* context,
                                            const coop::v1::LinkRequest* request,
                                            coop::v1::LinkResponse* response) {
  Role role;
  if (auto* refused = Refuse(context, Role::kRead, "Link", &role)) return refused;
  return AcceptAsync(context, response, [this, request, role](uint64_t id, auto done) {
    service_->Link(*request, id, std::move(done), role >= Role::kCompile);
  });
}

grpc::ServerUnaryReactor* CoopService::Plan(grpc::CallbackServerContext* context,
                                            const coop::v1::PlanRequest* request,
                                            coop::v1::PlanResponse* response) {
  Role role;
  if (auto* refused = Refuse(context, Role::kRead, "Plan", &role)) return refused;
  return AcceptAsync(context, response, [this, request, role](uint64_t id, auto done) {
    service_->Plan(*request, id, std::move(done), role >= Role::kCompile);
  });
}

grpc::ServerUnaryReactor* CoopService::Explain(grpc::CallbackServerContext* context,
                                               const coop::v1::SpecializeRequest* request,
                                               coop::v1::ExplainResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead, "Explain")) return refused;
  return AcceptSync(context, response, [this, request] {
    const std::vector<int> formats(request->formats().begin(), request->formats().end());
    return service_->Explain(request->spec(), formats);
  });
}

grpc::ServerUnaryReactor* CoopService::ResetStats(grpc::CallbackServerContext* context,
                                                  const coop::v1::GetStatsRequest* /*request*/,
                                                  coop::v1::Stats* response) {
  if (auto* refused = Refuse(context, Role::kAdmin, "ResetStats")) return refused;
  return AcceptSync(context, response,
                    [this] { return absl::StatusOr<coop::v1::Stats>(service_->ResetStats()); });
}

grpc::ServerUnaryReactor* CoopService::ListEntries(grpc::CallbackServerContext* context,
                                                   const coop::v1::ListEntriesRequest* request,
                                                   coop::v1::ListEntriesResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead, "ListEntries")) return refused;
  return AcceptSync(context, response, [this, request] { return service_->ListEntries(*request); });
}

grpc::ServerUnaryReactor* CoopService::Purge(grpc::CallbackServerContext* context,
                                             const coop::v1::PurgeRequest* request,
                                             coop::v1::PurgeResponse* response) {
  if (auto* refused = Refuse(context, Role::kAdmin, "Purge")) return refused;
  return AcceptSync(
      context, response, [this, request] { return service_->Purge(*request); }, maintenance_);
}

grpc::ServerUnaryReactor* CoopService::Verify(grpc::CallbackServerContext* context,
                                              const coop::v1::VerifyRequest* /*request*/,
                                              coop::v1::VerifyResponse* response) {
  if (auto* refused = Refuse(context, Role::kAdmin, "Verify")) return refused;
  return AcceptSync(
      context, response, [this] { return service_->Verify(); }, maintenance_);
}

grpc::ServerUnaryReactor* CoopService::Vacuum(grpc::CallbackServerContext* context,
                                              const coop::v1::VacuumRequest* /*request*/,
                                              coop::v1::VacuumResponse* response) {
  if (auto* refused = Refuse(context, Role::kAdmin, "Vacuum")) return refused;
  return AcceptSync(
      context, response, [this] { return service_->Vacuum(); }, maintenance_);
}

grpc::ServerUnaryReactor* CoopService::Catalog(grpc::CallbackServerContext* context,
                                               const coop::v1::CatalogRequest* /*request*/,
                                               coop::v1::CatalogResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead, "Catalog")) return refused;
  auto* reactor = context->DefaultReactor();
  *response = service_->Catalog();
  context->AddTrailingMetadata("coopd-status", "server");
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

bool CoopService::WaitIdle(std::chrono::steady_clock::time_point deadline) const {
  while (in_flight_.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

grpc::ServerUnaryReactor* CoopService::GetStats(grpc::CallbackServerContext* context,
                                                const coop::v1::GetStatsRequest* /*request*/,
                                                coop::v1::Stats* response) {
  if (auto* refused = Refuse(context, Role::kRead, "GetStats")) return refused;
  auto* reactor = context->DefaultReactor();
  *response = service_->GetStats();
  for (const auto& l : listeners_) *response->add_listeners() = l;
  if (access_ != nullptr) {
    response->set_unauthenticated_calls(access_->unauthenticated());
    response->set_denied_calls(access_->denied());
  }
  context->AddTrailingMetadata("coopd-status", "server");
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace coopd

// grpc_service.h: the gRPC edge. The only place where absl::Status becomes grpc::Status.
//
// Handlers use the callback API and hand request work to an executor, so gRPC's own threads
// never block on a compile or on the disk. Long maintenance (purge, verify, vacuum) runs on a
// separate executor, so it never occupies the threads that serve Specialize and Link; GetStats
// and Catalog answer on gRPC's thread from counters and tables, touching no lock the disk tier
// holds for long.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "coop/v1/coop.grpc.pb.h"
#include "server/rpc/access.h"
#include "server/service/service.h"

namespace coopd {

// The status message travels in gRPC's trailing metadata, which clients cap (8 KiB by default,
// counted after gRPC's percent-encoding, which writes a byte outside printable ASCII as 3).
// A message of at most kMaxStatusMessageBytes (so counted) is sent as it is; a longer one is
// summarized: its first lines, up to kStatusSummaryBytes, and how many bytes were left out.
inline constexpr size_t kMaxStatusMessageBytes = 4096;
inline constexpr size_t kStatusSummaryBytes = 3072;
// The request metadata that asks for the whole message in the status details.
inline constexpr char kErrorDetailsKey[] = "coopd-error-details";
inline constexpr char kErrorDetailsFull[] = "full";
// ErrorDetail's type URL in the status details.
inline constexpr char kErrorDetailTypeUrl[] = "type.googleapis.com/coop.v1.ErrorDetail";

// `message` when it fits the bound above; otherwise its summary.
std::string StatusSummary(std::string_view message);

// Converts an absl::Status to the grpc::Status a client sees. Codes map one to one; the message
// is StatusSummary()'s. With `with_details`, a summarized message also travels whole in the
// status details (coop.v1.StatusDetails holding a coop.v1.ErrorDetail).
grpc::Status ToGrpcStatus(const absl::Status& status, bool with_details = false);

// A fixed pool of threads running queued tasks in FIFO order. Drain() runs every queued task,
// then joins the threads.
class Executor {
 public:
  explicit Executor(int threads);
  ~Executor();
  void Submit(std::function<void()> task);
  void Drain();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

class CoopService final : public coop::v1::Coop::CallbackService {
 public:
  // `maintenance` runs Purge, Verify and Vacuum; `executor` everything else. `access` decides
  // who may call what (null: everyone may call everything); it must outlive the service.
  CoopService(coopd::Service* service, Executor* executor, Executor* maintenance,
              const AccessControl* access = nullptr)
      : service_(service), executor_(executor), maintenance_(maintenance), access_(access) {}
  // What GetStats reports of the listeners (Stats.listeners); set once before serving.
  void SetListeners(std::vector<coop::v1::Listener> listeners) {
    listeners_ = std::move(listeners);
  }

  grpc::ServerUnaryReactor* Specialize(grpc::CallbackServerContext* context,
                                       const coop::v1::SpecializeRequest* request,
                                       coop::v1::SpecializeResponse* response) override;
  grpc::ServerUnaryReactor* SpecializeBundle(grpc::CallbackServerContext* context,
                                             const coop::v1::SpecializeBundleRequest* request,
                                             coop::v1::SpecializeResponse* response) override;
  grpc::ServerUnaryReactor* Link(grpc::CallbackServerContext* context,
                                 const coop::v1::LinkRequest* request,
                                 coop::v1::LinkResponse* response) override;
  grpc::ServerUnaryReactor* Explain(grpc::CallbackServerContext* context,
                                    const coop::v1::SpecializeRequest* request,
                                    coop::v1::ExplainResponse* response) override;
  grpc::ServerUnaryReactor* ResetStats(grpc::CallbackServerContext* context,
                                       const coop::v1::GetStatsRequest* request,
                                       coop::v1::Stats* response) override;
  grpc::ServerUnaryReactor* ListEntries(grpc::CallbackServerContext* context,
                                        const coop::v1::ListEntriesRequest* request,
                                        coop::v1::ListEntriesResponse* response) override;
  grpc::ServerUnaryReactor* Purge(grpc::CallbackServerContext* context,
                                  const coop::v1::PurgeRequest* request,
                                  coop::v1::PurgeResponse* response) override;
  grpc::ServerUnaryReactor* Verify(grpc::CallbackServerContext* context,
                                   const coop::v1::VerifyRequest* request,
                                   coop::v1::VerifyResponse* response) override;
  grpc::ServerUnaryReactor* Vacuum(grpc::CallbackServerContext* context,
                                   const coop::v1::VacuumRequest* request,
                                   coop::v1::VacuumResponse* response) override;
  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context,
                                 const coop::v1::PlanRequest* request,
                                 coop::v1::PlanResponse* response) override;
  grpc::ServerUnaryReactor* Catalog(grpc::CallbackServerContext* context,
                                    const coop::v1::CatalogRequest* request,
                                    coop::v1::CatalogResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const coop::v1::GetStatsRequest* request,
                                     coop::v1::Stats* response) override;

  int in_flight() const { return in_flight_.load(); }

 private:
  // Accepts a request (or refuses it while draining) and runs `work` on the executor; `work`
  // must arrange for `finish` to be called exactly once.
  using Finish = std::function<void(const absl::Status&)>;
  // A call needing role `need` (access.h) that its caller lacks: finishes it with
  // UNAUTHENTICATED or PERMISSION_DENIED and returns its reactor. nullptr when admitted, with
  // the caller's role in *role (when given).
  grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context, Role need,
                                   std::string_view rpc, Role* role = nullptr);
  grpc::ServerUnaryReactor* Accept(grpc::CallbackServerContext* context,
                                   std::function<void(uint64_t id, Finish finish)> work,
                                   Executor* on = nullptr);
  // For calls whose service method delivers a StatusOr<Response> through a callback:
  // `start(id, done)` starts it.
  template <class Response, class Start>
  grpc::ServerUnaryReactor* AcceptAsync(grpc::CallbackServerContext* context, Response* response,
                                        Start start) {
    return Accept(context, [response, start](uint64_t id, Finish finish) {
      start(id, std::function<void(absl::StatusOr<Response>)>(
                    [response, finish](absl::StatusOr<Response> r) {
                      if (r.ok()) *response = std::move(*r);
                      finish(r.status());
                    }));
    });
  }
  // For blocking calls that produce their response on the executor thread (`on`, default the
  // request executor).
  template <class Response, class Fn>
  grpc::ServerUnaryReactor* AcceptSync(grpc::CallbackServerContext* context, Response* response,
                                       Fn fn, Executor* on = nullptr) {
    return Accept(
        context,
        [response, fn](uint64_t, Finish finish) {
          auto result = fn();
          if (result.ok()) *response = std::move(*result);
          finish(result.status());
        },
        on);
  }

 public:
  // Shutdown, step 1: from now on new Specialize calls get UNAVAILABLE ("shutting down; retry").
  void BeginDrain() { draining_ = true; }
  // Shutdown, step 2: waits until the requests accepted before BeginDrain() have finished, or
  // until `deadline`. Returns false on timeout.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) const;

 private:
  coopd::Service* const service_;
  Executor* const executor_;
  Executor* const maintenance_;
  const AccessControl* const access_;
  std::vector<coop::v1::Listener> listeners_;
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<int> in_flight_{0};
  std::atomic<bool> draining_{false};
};

}  // namespace coopd

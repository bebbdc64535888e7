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
#include "server/rpc/client_limits.h"
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

// Request ids. Every call gets one: the client's `x-request-id` metadata when it is sane (1 to
// kMaxRequestIdBytes of letters, digits and - _ . : / + = @, so it cannot break a log line or
// forge another request's tag), else one coopd makes, "<8 hex digits of this process>-<n>". The
// id tags the call's log lines ("[req ID] ...": log_format.h) and returns to the client in the
// `x-request-id` trailing metadata.
inline constexpr char kRequestIdKey[] = "x-request-id";
inline constexpr size_t kMaxRequestIdBytes = 64;
bool SaneRequestId(std::string_view id);

// `message` when it fits the bound above; otherwise its summary.
std::string StatusSummary(std::string_view message);

// Converts an absl::Status to the grpc::Status a client sees. Codes map one to one; the message
// is StatusSummary()'s. With `with_details`, a summarized message also travels whole in the
// status details (coop.v1.StatusDetails holding a coop.v1.ErrorDetail).
grpc::Status ToGrpcStatus(const absl::Status& status, bool with_details = false);

// Decodes a raw request into `message` with the parse a generated handler uses. RESOURCE_EXHAUSTED
// when it holds more than `max_bytes`; INVALID_ARGUMENT naming the message type and why
// (a string field holding invalid UTF-8 is named) when it does not decode.
absl::Status ParseRequest(const grpc::ByteBuffer& request, size_t max_bytes,
                          google::protobuf::Message* message);

// Who a request counts against for the per-client limits: "token:NAME" for a call that
// presented a valid token (`token_name`, the tokens file's NAME: coopd vouches for it, so it
// beats anything the client says about itself); otherwise "ipv4:ADDRESS" / "ipv6:[ADDRESS]"
// (the peer without its port) on TCP; on the Unix socket, which tells nothing about the peer,
// "unix:" and the caller's own "coopd-client" metadata (escaped, at most 64 bytes), or
// "unix:(anonymous)" without it.
inline constexpr char kClientMetadataKey[] = "coopd-client";
std::string ClientIdentity(const grpc::CallbackServerContext& context,
                           std::string_view token_name = {});

// The edge's limits (daemon flags).
struct RpcLimits {
  size_t max_message_bytes = size_t{64} << 20;  // --max-message-mb
  ClientLimitOptions clients;
};

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

// The generated service with every method raw.
using RawCoopService = coop::v1::Coop::WithRawCallbackMethod_Specialize<
    coop::v1::Coop::WithRawCallbackMethod_SpecializeBundle<
        coop::v1::Coop::WithRawCallbackMethod_Link<coop::v1::Coop::WithRawCallbackMethod_GetStats<
            coop::v1::Coop::WithRawCallbackMethod_Explain<
                coop::v1::Coop::WithRawCallbackMethod_ResetStats<
                    coop::v1::Coop::WithRawCallbackMethod_ListEntries<
                        coop::v1::Coop::WithRawCallbackMethod_Purge<
                            coop::v1::Coop::WithRawCallbackMethod_Verify<
                                coop::v1::Coop::WithRawCallbackMethod_Vacuum<
                                    coop::v1::Coop::WithRawCallbackMethod_Catalog<
                                        coop::v1::Coop::WithRawCallbackMethod_Plan<
                                            coop::v1::Coop::Service>>>>>>>>>>>>;

class CoopService final : public RawCoopService {
 public:
  // `maintenance` runs Purge, Verify and Vacuum; `executor` everything else. `access` decides
  // who may call what (null: everyone may call everything); it must outlive the service.
  CoopService(coopd::Service* service, Executor* executor, Executor* maintenance,
              RpcLimits limits = {}, const AccessControl* access = nullptr);
  // What GetStats reports of the listeners (Stats.listeners); set once before serving.
  void SetListeners(std::vector<coop::v1::Listener> listeners) {
    listeners_ = std::move(listeners);
  }

  using Raw = grpc::ByteBuffer;
  grpc::ServerUnaryReactor* Specialize(grpc::CallbackServerContext* context, const Raw* request,
                                       Raw* response) override;
  grpc::ServerUnaryReactor* SpecializeBundle(grpc::CallbackServerContext* context,
                                             const Raw* request, Raw* response) override;
  grpc::ServerUnaryReactor* Link(grpc::CallbackServerContext* context, const Raw* request,
                                 Raw* response) override;
  grpc::ServerUnaryReactor* Explain(grpc::CallbackServerContext* context, const Raw* request,
                                    Raw* response) override;
  grpc::ServerUnaryReactor* ResetStats(grpc::CallbackServerContext* context, const Raw* request,
                                       Raw* response) override;
  grpc::ServerUnaryReactor* ListEntries(grpc::CallbackServerContext* context, const Raw* request,
                                        Raw* response) override;
  grpc::ServerUnaryReactor* Purge(grpc::CallbackServerContext* context, const Raw* request,
                                  Raw* response) override;
  grpc::ServerUnaryReactor* Verify(grpc::CallbackServerContext* context, const Raw* request,
                                   Raw* response) override;
  grpc::ServerUnaryReactor* Vacuum(grpc::CallbackServerContext* context, const Raw* request,
                                   Raw* response) override;
  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context, const Raw* request,
                                 Raw* response) override;
  grpc::ServerUnaryReactor* Catalog(grpc::CallbackServerContext* context, const Raw* request,
                                    Raw* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context, const Raw* request,
                                     Raw* response) override;

  int in_flight() const { return in_flight_.load(); }
  // When a call last arrived or last finished (the service's start before the first): with
  // in_flight(), what --idle-exit reads.
  std::chrono::steady_clock::time_point last_activity() const {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(last_activity_.load()));
  }
  // What GetStats answers: the service's counters, and this edge's (listeners, refusals by
  // access control and by the per-client limits, requests that did not decode). /metrics reads
  // the same.
  coop::v1::Stats Stats() const;

  // Shutdown, step 1: from now on new Specialize calls get UNAVAILABLE ("shutting down; retry").
  void BeginDrain() { draining_ = true; }
  // Shutdown, step 2: waits until the requests accepted before BeginDrain() have finished, or
  // until `deadline`. Returns false on timeout.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) const;

 private:
  // One call from its decoded request until its reply is sent.
  class Reply {
   public:
    Reply(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
          grpc::ByteBuffer* out)
        : context(context), reactor_(reactor), out_(out) {}
    virtual ~Reply() = default;
    // Sends `status` (when OK, with the response, serialized as the generated handler would)
    // and the coopd-status trailer, then deletes this.
    void Send(grpc::Status status);
    // Sends `reply`, already encoded (reply_writer.h), with status OK; then as Send.
    void SendEncoded(grpc::ByteBuffer reply);
    grpc::CallbackServerContext* const context;
    Role role = Role::kAdmin;  // the caller's (Admit)
    ClientLimiter::Admission admission;
    // Cancelled when gRPC cancels the call (Reactor), and the client quotas count against
    // (Admit sets it when the service has quotas).
    coopd::RequestScope scope;
    std::string request_id;  // RequestId(), set by Decode

   private:
    void Finish(const grpc::Status& status);
    virtual const google::protobuf::Message& response() const = 0;
    grpc::ServerUnaryReactor* const reactor_;
    grpc::ByteBuffer* const out_;
  };
  template <class Request, class Response>
  class Call final : public Reply {
   public:
    using Reply::Reply;
    Request request;
    Response response_message;

   private:
    const google::protobuf::Message& response() const override { return response_message; }
  };
  // What a call must pass before its request is even decoded: the role its RPC needs
  // (docs/security.md has the table), and whether it counts against its client's limits
  // (GetStats and Catalog, which health checks and probes call, never do).
  struct Gate {
    Role need;
    const char* rpc;
    bool limited = true;
  };
  // Admits `call` through `gate`, in this order: authentication and the role (an
  // unauthenticated or unprivileged caller is refused before it can spend any client's rate
  // budget), then the per-client limits (against the token's name when it presented one), so
  // neither a stranger nor a client over its limits makes coopd decode its request. Sets
  // call->role and call->admission.
  absl::Status Admit(Reply* call, const Gate& gate);
  // Each call's reactor: when gRPC cancels the call (the client cancelled, or its deadline
  // passed: gRPC cancels a call at its deadline), it cancels the call's token with CANCELLED or
  // DEADLINE_EXCEEDED, which stops the work done for that call alone (service.h's RequestScope).
  class Reactor final : public grpc::ServerUnaryReactor {
   public:
    explicit Reactor(grpc::CallbackServerContext* context) : context_(context) {}
    void OnCancel() override;
    void OnDone() override { delete this; }
    const std::shared_ptr<CancelToken> cancel = std::make_shared<CancelToken>();

   private:
    grpc::CallbackServerContext* const context_;
  };
  // Admits the call (Admit), decodes the raw request into a new Call and hands it to `handle`,
  // which must arrange for call->Send exactly once; a refused or undecodable request is
  // answered here.
  template <class Request, class Response, class Handle>
  grpc::ServerUnaryReactor* Decode(grpc::CallbackServerContext* context, const Raw* in, Raw* out,
                                   const Gate& gate, Handle handle) {
    Touch();
    auto* reactor = new Reactor(context);
    auto* call = new Call<Request, Response>(context, reactor, out);
    call->scope.cancel = reactor->cancel;
    call->request_id = RequestId(context);
    if (absl::Status s = Admit(call, gate); !s.ok()) {
      const_cast<Raw*>(in)->Clear();
      call->Send(ToGrpcStatus(s));
    } else if (absl::Status s = Parse(in, call->request_id, &call->request); !s.ok()) {
      call->Send(ToGrpcStatus(s));
    } else {
      handle(call);
    }
    return reactor;
  }
  absl::Status Parse(const Raw* in, const std::string& request_id,
                     google::protobuf::Message* request);
  // Specialize and SpecializeBundle once decoded: a memory hit (Service::SpecializeFromMemory)
  // is answered on this gRPC thread; anything else goes to the executor (Service::Specialize,
  // with the memo's probe) and fills `response`.
  void SpecializeCall(Reply* call, coop::v1::SpecializeResponse* response,
                      std::vector<coop::v1::PrimitiveSpec> specs, bool bundle,
                      std::vector<int> formats, std::vector<coop::v1::HeldArtifact> have);
  // The call's request id (see kRequestIdKey), also set as its trailing metadata.
  std::string RequestId(grpc::CallbackServerContext* context);

  // Accepts an admitted, decoded request (or refuses it while draining) and runs `work` on the
  // executor; `work` must arrange for `finish` to be called exactly once.
  using Finish = std::function<void(const absl::Status&)>;
  void Accept(Reply* call, std::function<void(const std::string& id, Finish finish)> work,
              Executor* on = nullptr);
  // For calls whose service method delivers a StatusOr<Response> through a callback:
  // `start(id, done)` starts it.
  template <class Request, class Response, class Start>
  void AcceptAsync(Call<Request, Response>* call, Start start) {
    Accept(call, [call, start](const std::string& id, Finish finish) {
      start(id, std::function<void(absl::StatusOr<Response>)>(
                    [call, finish](absl::StatusOr<Response> r) {
                      if (r.ok()) call->response_message = std::move(*r);
                      finish(r.status());
                    }));
    });
  }
  // For blocking calls that produce their response on the executor thread (`on`, default the
  // request executor).
  template <class Request, class Response, class Fn>
  void AcceptSync(Call<Request, Response>* call, Fn fn, Executor* on = nullptr) {
    Accept(
        call,
        [call, fn](const std::string&, Finish finish) {
          auto result = fn();
          if (result.ok()) call->response_message = std::move(*result);
          finish(result.status());
        },
        on);
  }

  coopd::Service* const service_;
  Executor* const executor_;
  Executor* const maintenance_;
  const RpcLimits limits_;
  ClientLimiter clients_;
  const AccessControl* const access_;
  std::vector<coop::v1::Listener> listeners_;
  std::string request_id_prefix_;  // 8 random hex digits, so ids differ across restarts
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<int> in_flight_{0};
  std::atomic<std::chrono::steady_clock::rep> last_activity_{
      std::chrono::steady_clock::now().time_since_epoch().count()};
  void Touch() { last_activity_ = std::chrono::steady_clock::now().time_since_epoch().count(); }
  // Requests refused by Parse: malformed (INVALID_ARGUMENT), over --max-message-mb.
  std::atomic<uint64_t> undecodable_{0}, oversized_{0};
  std::atomic<bool> draining_{false};
};

}  // namespace coopd

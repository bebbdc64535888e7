#include "server/rpc/stop_service.h"

#include <optional>
#include <string>

#include "server/rpc/grpc_service.h"

namespace coopd {
namespace {

// One call: a refusal is finished at once; an admitted call reads its (ignored) request, then
// writes the empty reply with OK, and asks for the stop when gRPC is done with it.
class StopReactor final : public grpc::ServerGenericBidiReactor {
 public:
  StopReactor(grpc::GenericCallbackServerContext* context, const AccessControl* access,
              const std::function<void(const Caller&)>* stop)
      : stop_(stop) {
    if (context->method() != kStopMethod) {
      Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          "coopd has no method " + context->method()));
      return;
    }
    auto caller = access->Admit(*context, Role::kAdmin, "Stop");
    if (!caller.ok()) {
      Finish(ToGrpcStatus(caller.status()));
      return;
    }
    caller_ = std::move(*caller);
    StartRead(&request_);
  }

  void OnReadDone(bool /*ok*/) override {
    // The request is empty (nothing to read, or a client that half-closed without one).
    grpc::Slice empty("", 0);
    reply_ = grpc::ByteBuffer(&empty, 1);
    StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnDone() override {
    if (caller_) (*stop_)(*caller_);
    delete this;
  }

 private:
  const std::function<void(const Caller&)>* const stop_;
  std::optional<Caller> caller_;  // set once admitted
  grpc::ByteBuffer request_, reply_;
};

}  // namespace

grpc::ServerGenericBidiReactor* StopService::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  return new StopReactor(context, access_, &stop_);
}

}  // namespace coopd

// stop_service.h: the Stop call, `coopctl stop`'s: "/coop.v1.Lifecycle/Stop", an empty request
// and an empty reply (google.protobuf.Empty's encoding), admitted for the admin role.
//
// It is served by a generic callback service (raw bytes, no generated code), registered beside
// CoopService, so that it needs no change of coop.proto: a method that is not Stop gets
// UNIMPLEMENTED, as it would without this service. A caller AccessControl admits gets an OK
// reply; once that reply has gone out (or the caller has gone away), `stop` runs: the daemon then
// stops as on SIGTERM (the drain: refuse new calls, give the ones in flight the shutdown grace).
// Calls that AccessControl refuses stop nothing and get its UNAUTHENTICATED or
// PERMISSION_DENIED.
//
// Thread-safe; `access` must outlive the service; `stop` may be called more than once (once per
// admitted call) from gRPC's threads.
#pragma once

#include <grpcpp/generic/async_generic_service.h>

#include <functional>

#include "server/rpc/access.h"

namespace coopd {

inline constexpr char kStopMethod[] = "/coop.v1.Lifecycle/Stop";

class StopService final : public grpc::CallbackGenericService {
 public:
  StopService(const AccessControl* access, std::function<void(const Caller&)> stop)
      : access_(access), stop_(std::move(stop)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;

 private:
  const AccessControl* const access_;
  const std::function<void(const Caller&)> stop_;
};

}  // namespace coopd

// client_internal.h: the C++ client's calls on the wire messages themselves (calls.cc), for the
// C ABI (coop_c*.cc) and nothing else; not part of the public API.
//
// The C ABI builds specs by proto field path and reads replies whole, so it depends on
// coop.proto, not on the shape of the C++ structs in coop/client.h. These calls go through the
// client's one call path: the deadline, auto-start, and "not reachable" for a transport failure.
#pragma once

#include <optional>

#include "coop/client.h"
#include "coop/v1/coop.pb.h"

namespace coop {

struct ClientAccess {
  // Each sets the request's `client` field from ClientOptions::client_name.
  static std::optional<Error> Specialize(Client& client, v1::SpecializeRequest request,
                                         v1::SpecializeResponse* response);
  static std::optional<Error> SpecializeBundle(Client& client, v1::SpecializeBundleRequest request,
                                               v1::SpecializeResponse* response);
  static std::optional<Error> Link(Client& client, v1::LinkRequest request,
                                   v1::LinkResponse* response);
  static std::optional<Error> Catalog(Client& client, v1::CatalogResponse* response);
  static std::optional<Error> GetStats(Client& client, v1::Stats* response);
};

}  // namespace coop

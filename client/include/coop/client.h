// coop/client.h: the C++ client of coopd, for JIT frontends.
//
// This header and the others under coop/ are the whole public API. They expose no gRPC or
// protobuf types, so a frontend can embed the client without those headers.
//
//   coop::Client client;                              // default socket (coop/paths.h)
//   coop::Spec spec;
//   spec.family = "block_reduce"; spec.dtype = "float32"; spec.block = {256};
//   spec.arch = "sm_90";
//   coop::Result<coop::Artifact> a = client.Specialize(spec);
//   if (!a) { std::cerr << a.error().message; ... }
//   // a->ltoir: link with nvJitLink; a->entries[0].declaration: paste into the kernel source;
//   // a->temp_storage.bytes/align: reserve shared memory.
//   // client.Specialize(spec, coop::Formats::kBitcode)->bitcode.data: LLVM bitcode (clang),
//   // for frontends that link bitcode libraries (CuTe DSL).
//
// The API's value types live in the headers included below, each by concern: coop/error.h
// (Error, Result), coop/spec.h (Spec), coop/artifact.h (Artifact, Bytes, Link*),
// coop/plan.h (Plan*), coop/cache.h (Explain, ListEntries, Verify, Vacuum), coop/catalog.h
// (Catalog), coop/stats.h (Stats, HealthStatus), coop/client_options.h (ClientOptions).
// Including this header includes them all.
//
// Thread safety: a Client may be used from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coop/artifact.h"
#include "coop/cache.h"
#include "coop/catalog.h"
#include "coop/client_options.h"
#include "coop/error.h"
#include "coop/plan.h"
#include "coop/spec.h"
#include "coop/stats.h"

namespace coop {

class Client {
 public:
  Client();  // default options
  explicit Client(ClientOptions options);
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  // The socket this client talks to.
  const std::string& socket_path() const;

  Result<Artifact> Specialize(const Spec& spec, Formats formats = Formats::kLtoIr);
  // Several specs compiled into one LTO-IR (one round trip); parts follow `specs`' order.
  Result<Artifact> SpecializeBundle(const std::vector<Spec>& specs,
                                    Formats formats = Formats::kLtoIr);
  // Links kernel modules with cached artifacts into a cubin.
  Result<LinkResult> Link(const LinkRequest& request);
  Result<Stats> GetStats();
  // Returns the stats as they were, then zeroes every counter.
  Result<Stats> ResetStats();

  // Cache maintenance.
  // The key of one format (kBoth is refused: each format has its own key).
  Result<Explanation> Explain(const Spec& spec, Formats format = Formats::kLtoIr);
  // `with_specs`: also each entry's resolved specs and format (CacheEntry::specs, ::format).
  Result<std::vector<CacheEntry>> ListEntries(const CacheFilter& filter, uint32_t limit = 0,
                                              bool with_specs = false);
  // An empty filter purges nothing unless `all` is set. Returns the number of entries removed.
  Result<uint64_t> Purge(const CacheFilter& filter, bool all = false);
  Result<VerifyReport> Verify();
  Result<VacuumReport> Vacuum();

  Result<Catalog> GetCatalog();
  // The catalogue as one CCCL sees it (a name or a version, as Spec::cccl; empty: the daemon's
  // default): families' `available` and `requires` speak of that CCCL.
  Result<Catalog> GetCatalog(const std::string& cccl);

  // Asks the daemon's grpc.health.v1.Health service (what grpcurl and grpc_health_probe ask)
  // about `service`: "" (the whole daemon) or "coop.v1.Coop". kNotServing once coopd is
  // shutting down. Never starts a daemon, whatever ClientOptions::autostart says: a check must
  // not create what it checks. An unknown service is an Error with kNotFound; no daemon, a
  // kUnavailable Error that is not from_server.
  Result<HealthStatus> Health(const std::string& service = "");

  // Asks the daemon to stop, gracefully: it answers, then drains as on SIGTERM (new calls get
  // kUnavailable, those in flight get its shutdown grace) and exits. Needs the admin role when
  // the daemon requires tokens (kPermissionDenied / kUnauthenticated otherwise). Returns once
  // the daemon has accepted, not once it has exited. Never starts a daemon; with none running,
  // a kUnavailable Error that is not from_server.
  Result<bool> Stop();

  // Lays out the temp storage of a kernel's primitives and the frontend's reservations in its
  // dynamic shared memory. Spec uses are resolved as Specialize resolves them (a cache hit once
  // specialized, else a compile).
  Result<PlanResult> Plan(const PlanRequest& request);

 private:
  friend struct ClientAccess;  // the C ABI's calls on the wire messages (src/client_internal.h)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coop

// fetch.cc: Specialize's fetch stage: the cache tiers, the compile in flight (single-flight), the
// farm lease across replicas, and the per-client compile quota; a hit is decoded and counted here.
#include <spdlog/spdlog.h>

#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::Artifact;

coop::v1::Origin ProtoOrigin(CacheOrigin tier) {
  switch (tier) {
    case CacheOrigin::kMemory:
      return coop::v1::ORIGIN_MEMORY;
    case CacheOrigin::kDisk:
      return coop::v1::ORIGIN_DISK;
    case CacheOrigin::kRemote:
      break;
  }
  return coop::v1::ORIGIN_REMOTE;
}

std::optional<Artifact> Service::ArtifactFromValue(const CacheValue& value, const std::string& key,
                                                   std::optional<coop::v1::Format> expected,
                                                   coop::v1::Origin origin, bool with_blob) {
  Artifact artifact;
  // A value that does not parse, names another key, or holds another format than the key's is
  // never served: recompile instead.
  const bool bitcode = artifact.ParseFromString(value.meta) && artifact.has_bitcode();
  if (artifact.key() != key || value.blob.empty() || (bitcode && artifact.bitcode().key() != key) ||
      (expected && bitcode != (*expected == coop::v1::FORMAT_BITCODE))) {
    spdlog::warn("cache value for {} is not its artifact; ignoring it", key.substr(0, 16));
    return std::nullopt;
  }
  artifact.set_origin(origin);
  const std::string digest =
      value.blob_sha256.empty() ? Sha256::Hex(value.blob) : value.blob_sha256;
  if (bitcode) {
    if (with_blob) artifact.mutable_bitcode()->set_data(value.blob);
    artifact.mutable_bitcode()->set_origin(origin);
    artifact.mutable_bitcode()->set_digest(digest);
  } else {
    if (with_blob) artifact.set_ltoir(value.blob);
    artifact.set_digest(digest);
  }
  return artifact;
}

std::optional<Artifact> Service::LookupArtifact(const std::string& key,
                                                std::optional<coop::v1::Format> expected) {
  const auto lookup_start = std::chrono::steady_clock::now();
  std::optional<CacheHit> hit = cache_->Get(key);
  if (!hit) return std::nullopt;
  // The one copy of the bytes a hit makes, after the tier's lock is released (the value is
  // shared with the memory tier: read, never moved).
  auto artifact = ArtifactFromValue(*hit->value, key, expected, ProtoOrigin(hit->origin),
                                    /*with_blob=*/true);
  if (!artifact) return std::nullopt;
  CountHit(hit->origin,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - lookup_start).count());
  return artifact;
}

void Service::CountHit(CacheOrigin tier, double lookup_seconds) {
  switch (tier) {
    case CacheOrigin::kMemory:
      ++memory_hits_;
      break;
    case CacheOrigin::kDisk:
      ++disk_hits_;
      break;
    case CacheOrigin::kRemote:
      ++remote_hits_;
      break;
  }
  hit_seconds_[static_cast<int>(tier)].Observe(lookup_seconds);
}

void Service::Fetch(const std::string& key, coop::v1::Format format, const std::string& description,
                    const std::string& request_id, bool may_compile, ArtifactDone done,
                    const Start& start, const RequestScope& caller) {
  if (auto artifact = LookupArtifact(key, format)) {
    // Per-hit lines are debug: hits are counted (Stats memory_hits, disk_hits, remote_hits).
    spdlog::debug("[req {}] {} hit ({}) key {}", request_id, description,
                  artifact->origin() == coop::v1::ORIGIN_MEMORY ? "memory"
                  : artifact->origin() == coop::v1::ORIGIN_DISK ? "disk"
                                                                : "remote",
                  key.substr(0, 16));
    return done(std::move(*artifact));
  }
  ++misses_;
  if (!may_compile) {
    spdlog::info("[req {}] {} miss key {}: not compiled (the caller's role is read)", request_id,
                 description, key.substr(0, 16));
    return done(absl::PermissionDeniedError(
        StrCat(description, " is not cached (key ", key.substr(0, 16),
               "), and this caller's token has role read, which fetches cached artifacts but "
               "cannot compile; a compile or admin token can")));
  }
  // The farm-wide lease this flight's leader holds, if any: released when the flight ends
  // (after the store), so waiting replicas find the entry, or, after a failure or when every
  // caller cancelled, take over.
  auto lease = std::make_shared<std::string>();
  // Starting a compile spends the caller's compile quota; joining one, or a hit, does not.
  const bool quota = quotas_.enabled() && !caller.client.empty();
  SingleFlight<Artifact>::JoinOptions join;
  join.recheck = [&]() { return LookupArtifact(key, format); };
  join.cancel = caller.cancel;
  if (quota) join.lead_refusal = quotas_.TakeCompile(caller.client, ClientQuotas::Clock::now());
  join.on_end = [this, key, lease] {
    if (!lease->empty()) options_.remote->Release(key, *lease);
  };
  // The leader charges the bytes its compile stored to its client's byte quota.
  auto leads = std::make_shared<bool>(false);
  std::shared_ptr<CancelToken> flight;
  auto joined = compiles_in_flight_.Join(
      key,
      [this, leads, client = quota ? caller.client : std::string(),
       done = std::move(done)](const absl::StatusOr<Artifact>& result) {
        if (*leads && !client.empty() && result.ok() &&
            result->origin() == coop::v1::ORIGIN_COMPILED) {
          quotas_.ChargeBytes(client, result->ltoir().size() + result->bitcode().data().size(),
                              ClientQuotas::Clock::now());
        }
        done(result);
      },
      std::move(join), &flight);
  if (quota && joined != SingleFlight<Artifact>::Joined::kLeader &&
      joined != SingleFlight<Artifact>::Joined::kRefused) {
    quotas_.ReturnCompile(caller.client);
  }
  if (joined == SingleFlight<Artifact>::Joined::kRefused) {
    spdlog::info("[req {}] {} miss key {}: not compiled ({})", request_id, description,
                 key.substr(0, 16), "over the client's quota");
  } else if (joined == SingleFlight<Artifact>::Joined::kWaiter) {
    spdlog::info("[req {}] joined the compile in flight for key {}", request_id, key.substr(0, 16));
  } else if (joined == SingleFlight<Artifact>::Joined::kLeader) {
    *leads = true;
    if (options_.remote == nullptr) return start(flight);
    // Across replicas: compile under the lease, or wait for the replica that holds it. A flight
    // abandoned meanwhile still compiles (or is served) here: the compile is queued with its
    // cancelled token, so the pool drops it at once, and the lease is released when the
    // flight's Complete comes.
    options_.remote->Coordinate(key, [this, key, format, lease, start, request_id, flight](
                                         RemoteCache::Turn turn, const std::string& token) {
      if (turn == RemoteCache::Turn::kReady) {
        if (auto artifact = LookupArtifact(key, format)) {
          spdlog::info("[req {}] another replica compiled key {}; served from the farm tier",
                       request_id, key.substr(0, 16));
          return compiles_in_flight_.Complete(key, *artifact, flight);
        }
      }
      *lease = token;
      start(flight);
    });
  }
}

}  // namespace coopd

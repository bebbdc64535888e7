// service_internal.h: the helpers that more than one of the Service's files use (the Service
// itself is in service.h). Private to server/service/; each is defined in the stage it belongs to.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "coop/v1/coop.pb.h"
#include "server/cache/cache.h"
#include "server/toolchain/toolchain.h"

namespace coopd {

// key.cc: the canonical encoding of a unit's specs (one spec's own, or the bundle's).
std::string BundleEncoding(const std::vector<coop::v1::PrimitiveSpec>& specs);

// compile.cc: "block_reduce reduce float sm_90", or "bundle of 3 specs for sm_90", for logs and
// errors.
std::string Describe(const std::vector<coop::v1::PrimitiveSpec>& specs);
// compile.cc: the toolchain an artifact names.
void FillToolchain(const Toolchain& tc, coop::v1::Toolchain* out);

// fetch.cc: the origin a reply names for a hit from `tier`.
coop::v1::Origin ProtoOrigin(CacheOrigin tier);

// reply.cc: one reply carrying both formats: the LTO-IR artifact, plus the bitcode module and
// the operators' bitcode of the bitcode artifact (everything else is the same in both).
coop::v1::Artifact MergeFormats(coop::v1::Artifact ltoir, coop::v1::Artifact bitcode);

// Gathers two results that arrive on any threads, in any order, then calls `done` once with both
// (on the thread that delivered the second).
template <class A, class B>
std::pair<std::function<void(absl::StatusOr<A>)>, std::function<void(absl::StatusOr<B>)>> Gather2(
    std::function<void(absl::StatusOr<A>, absl::StatusOr<B>)> done) {
  struct State {
    std::mutex mu;
    std::optional<absl::StatusOr<A>> a;
    std::optional<absl::StatusOr<B>> b;
    std::function<void(absl::StatusOr<A>, absl::StatusOr<B>)> done;
  };
  auto state = std::make_shared<State>();
  state->done = std::move(done);
  // Runs `done` when both are in, outside the lock (once both are set, nothing writes them).
  auto settle = [](const std::shared_ptr<State>& st, std::unique_lock<std::mutex> lock) {
    if (!st->a || !st->b) return;
    lock.unlock();
    st->done(std::move(*st->a), std::move(*st->b));
  };
  auto first = [state, settle](absl::StatusOr<A> a) {
    std::unique_lock<std::mutex> lock(state->mu);
    state->a = std::move(a);
    settle(state, std::move(lock));
  };
  auto second = [state, settle](absl::StatusOr<B> b) {
    std::unique_lock<std::mutex> lock(state->mu);
    state->b = std::move(b);
    settle(state, std::move(lock));
  };
  return {first, second};
}

}  // namespace coopd

// artifact_cache.h: coop::Client's in-process cache of the artifacts it received, for
// digest-only replies (coop.v1.SpecializeRequest.have). Internal to the client library.
//
// Keyed by the request's deterministic bytes (without `client` and `have`); holds complete
// replies (with their bytes and digests) as shared immutable Replies (reply_reader.h): an
// artifact served from here shares the held bytes, nothing is copied. Bounded by an entry
// count and a byte budget (the bytes of the artifacts' large fields); least recently used
// entries go first, and an artifact larger than the budget is not kept. Capacity 0 turns it
// off. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "coop/lru.h"
#include "coop/v1/coop.pb.h"
#include "reply_reader.h"

namespace coop::internal {

class ArtifactCache {
 public:
  ArtifactCache(size_t max_entries, uint64_t max_bytes)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}
  bool enabled() const { return max_entries_ > 0 && max_bytes_ > 0; }

  std::shared_ptr<const Reply> Find(const std::string& request);
  // Keeps a complete reply (not bytes_omitted, with the digest of each format it carries).
  void Store(const std::string& request, std::shared_ptr<const Reply> reply);
  size_t entries() const;
  uint64_t bytes() const;

  // The request's cache key: its deterministic bytes without `client` and `have`.
  template <class Request>
  static std::string Key(Request request) {
    request.clear_client();
    request.clear_have();
    return Deterministic(request);
  }
  static std::string Deterministic(const google::protobuf::Message& m);
  // What `held` lets a request send as `have`.
  template <class Request>
  static void AddHave(const Reply& reply, Request* request) {
    const coop::v1::Artifact& held = reply.artifact;
    for (int f : held.formats()) {
      auto* h = request->add_have();
      h->set_format(static_cast<coop::v1::Format>(f));
      const bool bitcode = f == coop::v1::FORMAT_BITCODE;
      h->set_key(bitcode ? held.bitcode().key() : held.key());
      h->set_digest(bitcode ? held.bitcode().digest() : held.digest());
      h->set_holds_metadata(true);  // FromReply and ToMessage fill it from `reply`
    }
  }
  // Whether a digest-only `reply` describes the artifact `held` is (the same keys and digests,
  // as many link inputs and parts): then its bytes, and what the key fixes, are held's.
  static bool Matches(const Reply& held, const coop::v1::Artifact& reply);
  // Writes `reply` as one whole message: its metadata, and the bytes (of bytes_from when it
  // is a digest-only reply filled from the cache). For the C ABI, which reads messages.
  static void ToMessage(const Reply& reply, coop::v1::Artifact* out);
  // The bytes of a reply's large fields (what the budget counts).
  static uint64_t Size(const Reply& r);

 private:
  const size_t max_entries_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  coop::Lru<std::shared_ptr<const Reply>> lru_{max_entries_, max_bytes_};  // guarded by mu_
};

}  // namespace coop::internal

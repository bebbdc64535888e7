// memory_reply.h: a memory hit's reply, encoded once and sent as it is on every repeat.
//
// A repeated request that hits the memory tier always gets the same reply: the cached
// artifact's metadata, origin MEMORY, its digests, the memo entry's algorithm choices. Parsing
// the stored metadata, merging formats and serializing the message again on every hit is work a
// hit does not need, so Service::SpecializeFromMemory builds the reply once per memo entry and
// cached value (MemoryReply), keeps it with the memo entry, and serves its bytes until the
// memory tier holds another value under one of its keys (a purge, an eviction and a recompile,
// a disk hit promoted again): the reply then no longer `Matches` and is built afresh.
//
// The reply is kept encoded: the protobuf wire bytes of SpecializeResponse around the large
// bytes fields, which stay in the memory tier's values and travel as slices of them
// (server/rpc/reply_writer.h). Protobuf parses fields in any order and merges a singular message
// field that occurs twice, so these pieces parse to exactly the message the normal
// serialization gives (tests/unit/server/rpc/reply_writer_test.cc compares them).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coop/v1/coop.pb.h"
#include "server/cache/cache.h"

namespace coopd {

// SpecializeResponse{artifact} as pieces: `head`, then the LTO-IR's `ltoir_size` bytes (when
// not 0), then `bitcode_framing`, then the bitcode's `bitcode_size` bytes (when not 0).
// `artifact` must leave Artifact.ltoir and Artifact.bitcode.data empty where a size is given;
// with both sizes 0, `head` is the whole reply.
struct EncodedResponse {
  std::string head;
  std::string bitcode_framing;
};
EncodedResponse EncodeSpecializeResponse(const coop::v1::Artifact& artifact, size_t ltoir_size,
                                         size_t bitcode_size);

// A length-delimited field's protobuf tag and length, appended to `out`.
void AppendLengthDelimitedHeader(std::string* out, int field, size_t length);

// What a caller must hold (SpecializeRequest.have) for a reply to leave the bytes out: one
// (format, key, digest) per format the reply carries.
struct HeldNeed {
  coop::v1::Format format;
  std::string key;
  std::string digest;
};
bool HaveCovers(const std::vector<HeldNeed>& needs,
                const std::vector<coop::v1::HeldArtifact>& have);

struct MemoryReply {
  // The memory tier's values the reply was made from (null weak pointers for a format the
  // request did not ask for). Weak: a reply kept in the memo never keeps an evicted value alive.
  std::weak_ptr<const CacheValue> ltoir_value, bitcode_value;
  // The reply with the values' bytes following `full.head` and `full.bitcode_framing`.
  EncodedResponse full;
  // Whole digest-only replies (Service::OmitHeldBytes): for a caller that holds every format
  // and keeps the whole artifact (every HeldArtifact.holds_metadata), and for one that does not.
  std::string digest_only_slim, digest_only;
  std::vector<HeldNeed> needs;
  uint64_t omitted_bytes = 0;     // what a digest-only reply leaves out (Stats.bytes_omitted)
  uint64_t auto_resolutions = 0;  // specs that asked for algorithm "auto" (Stats)
  std::string description;        // for the debug log line

  // Whether the reply was made from exactly these values (the same objects, not equal bytes).
  bool Matches(const std::shared_ptr<const CacheValue>& ltoir,
               const std::shared_ptr<const CacheValue>& bitcode) const {
    return Same(ltoir_value, ltoir) && Same(bitcode_value, bitcode);
  }

 private:
  // The same control block: never a new object that happens to sit at a freed one's address
  // (the weak pointer keeps the old block alive). Two nulls are the same.
  static bool Same(const std::weak_ptr<const CacheValue>& kept,
                   const std::shared_ptr<const CacheValue>& now) {
    return !kept.owner_before(now) && !now.owner_before(kept);
  }
};

// A MemoryReply shared between the threads that serve one memo entry: loaded on every hit,
// replaced when it no longer matches. Thread-safe.
class MemoryReplySlot {
 public:
  std::shared_ptr<const MemoryReply> Load() const;
  void Store(std::shared_ptr<const MemoryReply> reply);

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const MemoryReply> reply_;
};

}  // namespace coopd

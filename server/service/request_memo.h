// request_memo.h: a bounded map from a repeated Specialize request to the cache keys it resolves
// to, so that a hit skips validation, rendering and key hashing.
//
// The memo key is the request itself, byte for byte (its specs serialized deterministically,
// its formats, single spec or bundle) behind an epoch string naming everything else a key
// depends on (the toolchain's versions and header digest, and the algorithm-resolution epoch;
// Service::MemoEpoch). Two requests share an entry only when those bytes are equal, so they
// always resolve to the same keys; a request that would be refused, or that names a user
// operator, is never remembered. The value holds keys, not artifacts: a hit still looks the
// artifact up in the cache, and a memo entry whose artifact was evicted costs one slow lookup.
//
// Least recently used entries are evicted beyond `capacity`; capacity 0 turns the memo off.
// Thread-safe (one mutex, held for a lookup or an insert; values are small).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "coop/lru.h"
#include "coop/v1/coop.pb.h"
#include "server/service/memory_reply.h"

namespace coopd {

class RequestMemo {
 public:
  // What a remembered request resolves to. A key is empty for a format it did not ask for.
  struct Entry {
    std::string ltoir_key;
    std::string bitcode_key;
    std::string description;  // Describe(specs), for log lines
    // One per spec: what algorithm "auto" chose for it (`requested` empty for a spec that named
    // its algorithm); empty when none asked for "auto". The memo key holds the tuning tables'
    // digest (Service::ResolutionEpoch), so a remembered choice is the one resolving again gives.
    std::vector<coop::v1::AlgorithmChoice> choices;
    // The memory hit's reply, once one has been served (memory_reply.h); entries are immutable
    // but for this slot, which each Remember makes anew.
    std::shared_ptr<MemoryReplySlot> reply = std::make_shared<MemoryReplySlot>();
  };
  struct Counters {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t entries = 0;
    uint64_t evictions = 0;
  };

  static constexpr size_t kDefaultCapacity = 4096;
  explicit RequestMemo(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  bool enabled() const { return capacity_ > 0; }
  // The entry for `request` (counted as a hit), or null (counted as a miss unless `count_miss`
  // is false: a lookup that will be made again). Shared, not copied: it stays valid after the
  // memo evicts or replaces it.
  std::shared_ptr<const Entry> Find(const std::string& request, bool count_miss = true);
  // Counts the miss of a Find made with `count_miss` false whose request was not looked up again.
  void CountMiss();
  // Remembers (or refreshes) `request`'s entry, evicting the least recently used beyond the
  // capacity.
  void Remember(const std::string& request, Entry entry);
  Counters Stats() const;
  void ZeroStats();  // hits, misses and evictions; the entries stay

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  coop::Lru<std::shared_ptr<const Entry>> lru_ ABSL_GUARDED_BY(mu_){capacity_, 0};
  Counters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coopd

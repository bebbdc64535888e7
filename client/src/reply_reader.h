// reply_reader.h: coop::Client's reading of a Specialize reply straight from the slices gRPC
// received, so that a hit's LTO-IR is neither copied into a protobuf string nor allocated anew
// for every call (issue 17: the client's copy and the allocator churn around each ~135 KB
// buffer). Internal to the client library.
//
// SpecializeResponse { Artifact artifact = 1; } is walked on the wire: Artifact.ltoir (field 2)
// is taken aside, every other field of the artifact is handed to protobuf to parse as usual.
// The LTO-IR becomes a coop::Bytes that
//   - references the received slice itself when the bytes lie in one slice that is not much
//     larger than they are (no copy at all), or else
//   - is copied once into a buffer from a BufferPool, which takes the buffer back when the last
//     Bytes over it goes, for the next reply to fill without allocating.
// A malformed reply is an error naming what was wrong, never a crash.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coop/client.h"
#include "coop/v1/coop.pb.h"

namespace coop::internal {

// A Specialize or SpecializeBundle reply as the client holds it.
struct Reply {
  coop::v1::Artifact artifact;  // everything but ltoir (left empty)
  Bytes ltoir;
  // A digest-only reply filled from the client's artifact cache: the bytes (ltoir, and the
  // artifact's bitcode, link inputs, source and logs) are `bytes_from`'s; `artifact` gives the
  // rest (origin, timings, the algorithm choice).
  std::shared_ptr<const Reply> bytes_from;
  // The one that holds the bytes: bytes_from, else this.
  const Reply& bytes() const { return bytes_from ? *bytes_from : *this; }
};

// Buffers for LTO-IR that arrived over several slices. Thread-safe; held by shared_ptr (the
// buffers out with Bytes hold it too, so it outlives its Client if they do).
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // Keeps at most `max_free` idle buffers, each of at most `max_keep` bytes of capacity.
  explicit BufferPool(size_t max_free = 8, size_t max_keep = size_t{64} << 20)
      : max_free_(max_free), max_keep_(max_keep) {}
  // An empty buffer (capacity kept from its last use); returned to the pool when the last
  // reference to the shared_ptr it becomes goes.
  std::unique_ptr<std::string> Take();
  // Shares `buffer` (filled) as Bytes that give it back to this pool at the end.
  Bytes Share(std::unique_ptr<std::string> buffer);
  size_t idle() const;      // for tests
  uint64_t reused() const;  // Take calls answered from the pool (for tests)

 private:
  void Give(std::string* buffer);
  const size_t max_free_, max_keep_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<std::string>> free_;  // guarded by mu_
  uint64_t reused_ = 0;                             // guarded by mu_
};

// How the LTO-IR was taken (for tests).
enum class LtoirSource { kNone, kSlice, kPooledCopy };

// Reads `slices` (a whole SpecializeResponse) into `out`. False, with `error` saying what is
// wrong and `out` unspecified, when they are not a well-formed SpecializeResponse.
bool ReadReply(const std::vector<grpc::Slice>& slices, BufferPool* pool, Reply* out,
               std::string* error, LtoirSource* source = nullptr);

}  // namespace coop::internal

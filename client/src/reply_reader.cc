#include "reply_reader.h"

#include <grpc/grpc.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

namespace coop::internal {
namespace {

constexpr int kResponseArtifact = 1;  // SpecializeResponse.artifact
constexpr int kArtifactLtoir = 2;     // Artifact.ltoir
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// A slice kept alive by a Bytes over it. gRPC stays initialized while it lives, so that an
// artifact may outlive every Client and channel and still free its slice properly.
struct HeldSlice {
  explicit HeldSlice(grpc::Slice s) : slice(std::move(s)) { grpc_init(); }
  ~HeldSlice() {
    slice = grpc::Slice();
    grpc_shutdown();
  }
  HeldSlice(const HeldSlice&) = delete;
  HeldSlice& operator=(const HeldSlice&) = delete;
  grpc::Slice slice;
};

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads bytes in order across the slices of a message.
class SliceReader {
 public:
  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const auto& s : slices_) total_ += s.size();
    Settle();
  }
  size_t position() const { return position_; }
  size_t remaining() const { return total_ - position_; }

  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (remaining() == 0) return false;
      const uint8_t byte = Current()[offset_];
      Advance(1);
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return shift < 63 || byte <= 1;
    }
    return false;
  }
  // Appends the next n bytes to `out` (n <= remaining()).
  void Append(size_t n, std::string* out) {
    while (n > 0) {
      const size_t here = std::min(n, slices_[index_].size() - offset_);
      out->append(reinterpret_cast<const char*>(Current()) + offset_, here);
      Advance(here);
      n -= here;
    }
  }
  // Whether the next n bytes lie in one slice; then `slice` and `at` say where.
  bool Contiguous(size_t n, const grpc::Slice** slice, size_t* at) const {
    if (index_ >= slices_.size() || slices_[index_].size() - offset_ < n) return false;
    *slice = &slices_[index_];
    *at = offset_;
    return true;
  }
  void Skip(size_t n) {
    while (n > 0) {
      const size_t here = std::min(n, slices_[index_].size() - offset_);
      Advance(here);
      n -= here;
    }
  }

 private:
  const uint8_t* Current() const { return slices_[index_].begin(); }
  void Advance(size_t n) {
    offset_ += n;
    position_ += n;
    Settle();
  }
  // Moves past the end of the current slice (and past empty ones).
  void Settle() {
    while (index_ < slices_.size() && offset_ >= slices_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }
  const std::vector<grpc::Slice>& slices_;
  size_t index_ = 0, offset_ = 0, position_ = 0, total_ = 0;
};

// The size of a fixed-width or length-delimited payload, after its tag; varints are handled by
// the caller. False for groups and unknown wire types.
bool PayloadSize(SliceReader& in, int wire_type, uint64_t* size, std::string* error) {
  switch (wire_type) {
    case kFixed64:
      *size = 8;
      return true;
    case kFixed32:
      *size = 4;
      return true;
    case kLengthDelimited:
      if (!in.Varint(size)) {
        *error = "a length is truncated or not a varint";
        return false;
      }
      return true;
    default:
      *error = "wire type " + std::to_string(wire_type) + " (groups are not in coop.proto)";
      return false;
  }
}

}  // namespace

std::unique_ptr<std::string> BufferPool::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      auto buffer = std::move(free_.back());
      free_.pop_back();
      ++reused_;
      return buffer;
    }
  }
  return std::make_unique<std::string>();
}

Bytes BufferPool::Share(std::unique_ptr<std::string> buffer) {
  const std::string_view view(*buffer);
  std::shared_ptr<const std::string> owner(buffer.release(),
                                           [pool = shared_from_this()](const std::string* b) {
                                             pool->Give(const_cast<std::string*>(b));
                                           });
  return Bytes(std::move(owner), view);
}

void BufferPool::Give(std::string* buffer) {
  std::unique_ptr<std::string> owned(buffer);
  if (owned->capacity() > max_keep_) return;
  owned->clear();
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.size() < max_free_) free_.push_back(std::move(owned));
}

size_t BufferPool::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_.size();
}

uint64_t BufferPool::reused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reused_;
}

bool ReadReply(const std::vector<grpc::Slice>& slices, BufferPool* pool, Reply* out,
               std::string* error, LtoirSource* source) {
  SliceReader in(slices);
  std::string rest;  // the artifact's fields but ltoir, re-framed for protobuf
  // The LTO-IR's place: the last Artifact.ltoir wins, as in protobuf's parse.
  bool have_ltoir = false;
  size_t ltoir_at = 0;
  uint64_t ltoir_size = 0;
  std::string what;
  auto fail = [&](const std::string& why) {
    *error = "malformed SpecializeResponse at byte " + std::to_string(in.position()) + ": " + why;
    return false;
  };
  while (in.remaining() > 0) {
    uint64_t tag = 0, size = 0;
    if (!in.Varint(&tag) || (tag >> 3) == 0) return fail("a tag is truncated or zero");
    const int wire = static_cast<int>(tag & 7);
    if (wire == kVarint) {  // an unknown field of SpecializeResponse: skipped
      uint64_t ignored = 0;
      if (!in.Varint(&ignored)) return fail("a varint is truncated");
      continue;
    }
    if (!PayloadSize(in, wire, &size, &what)) return fail(what);
    if (size > in.remaining()) return fail("a field runs past the end of the message");
    if ((tag >> 3) != kResponseArtifact || wire != kLengthDelimited) {
      in.Skip(size);
      continue;
    }
    // An Artifact (several are merged, as protobuf merges them).
    const size_t end = in.position() + size;
    while (in.position() < end) {
      uint64_t field_tag = 0, field_size = 0;
      if (!in.Varint(&field_tag) || (field_tag >> 3) == 0) {
        return fail("a tag of the artifact is truncated or zero");
      }
      const int field_wire = static_cast<int>(field_tag & 7);
      if (field_wire == kVarint) {
        uint64_t v = 0;
        if (!in.Varint(&v)) return fail("a varint of the artifact is truncated");
        AppendVarint(field_tag, &rest);
        AppendVarint(v, &rest);
      } else {
        if (!PayloadSize(in, field_wire, &field_size, &what)) return fail(what);
        if (field_size > end - std::min(end, in.position())) {
          return fail("a field of the artifact runs past the artifact's end");
        }
        if ((field_tag >> 3) == kArtifactLtoir && field_wire == kLengthDelimited) {
          have_ltoir = true;
          ltoir_at = in.position();
          ltoir_size = field_size;
          in.Skip(field_size);
        } else {
          AppendVarint(field_tag, &rest);
          if (field_wire == kLengthDelimited) AppendVarint(field_size, &rest);
          in.Append(field_size, &rest);
        }
      }
      if (in.position() > end) return fail("a field of the artifact runs past the artifact's end");
    }
  }
  if (!out->artifact.ParseFromString(rest)) {
    *error = "malformed SpecializeResponse: its artifact does not parse as coop.v1.Artifact";
    return false;
  }
  out->bytes_from.reset();
  out->ltoir = Bytes();
  if (source != nullptr) *source = LtoirSource::kNone;
  if (!have_ltoir || ltoir_size == 0) return true;
  // Read the LTO-IR from its place: a second pass, so the first could stay a single walk.
  SliceReader at(slices);
  at.Skip(ltoir_at);
  const grpc::Slice* slice = nullptr;
  size_t offset = 0;
  // Sharing the slice keeps all of it alive: only when it is not much larger than the bytes.
  if (at.Contiguous(ltoir_size, &slice, &offset) && slice->size() <= 2 * ltoir_size + 4096) {
    auto held = std::make_shared<const HeldSlice>(*slice);
    const char* base = reinterpret_cast<const char*>(held->slice.begin());
    out->ltoir = Bytes(held, std::string_view(base + offset, ltoir_size));
    if (source != nullptr) *source = LtoirSource::kSlice;
    return true;
  }
  std::unique_ptr<std::string> buffer = pool->Take();
  buffer->reserve(ltoir_size);
  at.Append(ltoir_size, buffer.get());
  out->ltoir = pool->Share(std::move(buffer));
  if (source != nullptr) *source = LtoirSource::kPooledCopy;
  return true;
}

}  // namespace coop::internal

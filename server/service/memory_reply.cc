#include "server/service/memory_reply.h"

#include <algorithm>

namespace coopd {

namespace {

constexpr int kWireTypeLengthDelimited = 2;
constexpr int kResponseArtifact = coop::v1::SpecializeResponse::kArtifactFieldNumber;
constexpr int kArtifactLtoir = coop::v1::Artifact::kLtoirFieldNumber;
constexpr int kArtifactBitcode = coop::v1::Artifact::kBitcodeFieldNumber;
constexpr int kBitcodeData = coop::v1::BitcodeModule::kDataFieldNumber;

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

size_t HeaderSize(int field, size_t length) {
  return VarintSize(static_cast<uint64_t>(field) << 3) + VarintSize(length);
}

}  // namespace

void AppendLengthDelimitedHeader(std::string* out, int field, size_t length) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | kWireTypeLengthDelimited);
  AppendVarint(out, length);
}

EncodedResponse EncodeSpecializeResponse(const coop::v1::Artifact& artifact, size_t ltoir_size,
                                         size_t bitcode_size) {
  const size_t rest = artifact.ByteSizeLong();
  const size_t ltoir_field =
      ltoir_size == 0 ? 0 : HeaderSize(kArtifactLtoir, ltoir_size) + ltoir_size;
  // A second Artifact.bitcode holding only `data`: the parse merges it into the first.
  const size_t bitcode_inner =
      bitcode_size == 0 ? 0 : HeaderSize(kBitcodeData, bitcode_size) + bitcode_size;
  const size_t bitcode_field =
      bitcode_size == 0 ? 0 : HeaderSize(kArtifactBitcode, bitcode_inner) + bitcode_inner;
  const size_t artifact_length = rest + ltoir_field + bitcode_field;

  // The head: the response's framing, the artifact without its large bytes, and the LTO-IR's
  // framing.
  EncodedResponse out;
  out.head.reserve(HeaderSize(kResponseArtifact, artifact_length) + rest + 16);
  AppendLengthDelimitedHeader(&out.head, kResponseArtifact, artifact_length);
  const size_t at = out.head.size();
  out.head.resize(at + rest);
  artifact.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.head.data() + at));
  if (ltoir_size != 0) AppendLengthDelimitedHeader(&out.head, kArtifactLtoir, ltoir_size);
  if (bitcode_size != 0) {
    AppendLengthDelimitedHeader(&out.bitcode_framing, kArtifactBitcode, bitcode_inner);
    AppendLengthDelimitedHeader(&out.bitcode_framing, kBitcodeData, bitcode_size);
  }
  return out;
}

bool HaveCovers(const std::vector<HeldNeed>& needs,
                const std::vector<coop::v1::HeldArtifact>& have) {
  if (needs.empty() || have.empty()) return false;
  return std::all_of(needs.begin(), needs.end(), [&](const HeldNeed& need) {
    return !need.key.empty() && !need.digest.empty() &&
           std::any_of(have.begin(), have.end(), [&](const coop::v1::HeldArtifact& h) {
             return h.format() == need.format && h.key() == need.key && h.digest() == need.digest;
           });
  });
}

std::shared_ptr<const MemoryReply> MemoryReplySlot::Load() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reply_;
}

void MemoryReplySlot::Store(std::shared_ptr<const MemoryReply> reply) {
  std::lock_guard<std::mutex> lock(mu_);
  reply_ = std::move(reply);
}

}  // namespace coopd

#include "server/service/memory_reply.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>

namespace coopd {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

constexpr int kResponseArtifact = coop::v1::SpecializeResponse::kArtifactFieldNumber;
constexpr int kArtifactLtoir = coop::v1::Artifact::kLtoirFieldNumber;
constexpr int kArtifactBitcode = coop::v1::Artifact::kBitcodeFieldNumber;
constexpr int kBitcodeData = coop::v1::BitcodeModule::kDataFieldNumber;

uint32_t LengthDelimitedTag(int field) {
  return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

// The bytes of a length-delimited field's tag and length (protobuf's own varint arithmetic).
size_t HeaderSize(int field, size_t length) {
  return CodedOutputStream::VarintSize32(LengthDelimitedTag(field)) +
         CodedOutputStream::VarintSize64(length);
}

}  // namespace

void AppendLengthDelimitedHeader(std::string* out, int field, size_t length) {
  uint8_t header[2 * 10];  // two varints of at most 10 bytes each
  uint8_t* end = CodedOutputStream::WriteTagToArray(LengthDelimitedTag(field), header);
  end = CodedOutputStream::WriteVarint64ToArray(length, end);
  out->append(reinterpret_cast<const char*>(header), static_cast<size_t>(end - header));
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

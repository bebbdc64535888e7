#include "server/rpc/reply_writer.h"

#include <grpcpp/support/slice.h>

#include <vector>

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

// A slice over `shared`'s bytes that holds a reference to its owner until gRPC drops the slice.
grpc::Slice SharedSlice(const SharedBytes& shared) {
  auto* owner = new std::shared_ptr<const void>(shared.owner);
  return grpc::Slice(
      const_cast<char*>(shared.bytes.data()), shared.bytes.size(),
      [](void* user_data) { delete static_cast<std::shared_ptr<const void>*>(user_data); }, owner);
}

}  // namespace

void AppendLengthDelimitedHeader(std::string* out, int field, size_t length) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | kWireTypeLengthDelimited);
  AppendVarint(out, length);
}

grpc::ByteBuffer WriteSpecializeResponse(const coop::v1::Artifact& artifact,
                                         const SharedBytes& ltoir, const SharedBytes& bitcode) {
  const size_t rest = artifact.ByteSizeLong();
  const size_t ltoir_field =
      ltoir.bytes.empty() ? 0 : HeaderSize(kArtifactLtoir, ltoir.bytes.size()) + ltoir.bytes.size();
  // A second Artifact.bitcode holding only `data`: the parse merges it into the first.
  const size_t bitcode_inner =
      bitcode.bytes.empty() ? 0
                            : HeaderSize(kBitcodeData, bitcode.bytes.size()) + bitcode.bytes.size();
  const size_t bitcode_field =
      bitcode.bytes.empty() ? 0 : HeaderSize(kArtifactBitcode, bitcode_inner) + bitcode_inner;
  const size_t artifact_length = rest + ltoir_field + bitcode_field;

  // The head: the response's framing, the artifact without its large bytes, and the LTO-IR's
  // framing; the large bytes follow as slices of their own.
  std::string head;
  head.reserve(HeaderSize(kResponseArtifact, artifact_length) + rest + 2 * 16);
  AppendLengthDelimitedHeader(&head, kResponseArtifact, artifact_length);
  const size_t at = head.size();
  head.resize(at + rest);
  artifact.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(head.data() + at));
  std::vector<grpc::Slice> slices;
  slices.reserve(4);
  if (!ltoir.bytes.empty()) {
    AppendLengthDelimitedHeader(&head, kArtifactLtoir, ltoir.bytes.size());
  }
  slices.emplace_back(head);
  if (!ltoir.bytes.empty()) slices.push_back(SharedSlice(ltoir));
  if (!bitcode.bytes.empty()) {
    std::string framing;
    AppendLengthDelimitedHeader(&framing, kArtifactBitcode, bitcode_inner);
    AppendLengthDelimitedHeader(&framing, kBitcodeData, bitcode.bytes.size());
    slices.emplace_back(framing);
    slices.push_back(SharedSlice(bitcode));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace coopd

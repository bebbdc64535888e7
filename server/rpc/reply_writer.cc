#include "server/rpc/reply_writer.h"

#include <grpcpp/support/slice.h>

#include <vector>

namespace coopd {

namespace {

// A slice over `shared`'s bytes that holds a reference to its owner until gRPC drops the slice.
grpc::Slice SharedSlice(const SharedBytes& shared) {
  auto* owner = new std::shared_ptr<const void>(shared.owner);
  return grpc::Slice(
      const_cast<char*>(shared.bytes.data()), shared.bytes.size(),
      [](void* user_data) { delete static_cast<std::shared_ptr<const void>*>(user_data); }, owner);
}

}  // namespace

grpc::ByteBuffer AssembleSpecializeResponse(std::string_view head, const SharedBytes& ltoir,
                                            std::string_view bitcode_framing,
                                            const SharedBytes& bitcode) {
  grpc::Slice slices[4];
  size_t n = 0;
  slices[n++] = grpc::Slice(head.data(), head.size());
  if (!ltoir.bytes.empty()) slices[n++] = SharedSlice(ltoir);
  if (!bitcode.bytes.empty()) {
    slices[n++] = grpc::Slice(bitcode_framing.data(), bitcode_framing.size());
    slices[n++] = SharedSlice(bitcode);
  }
  return grpc::ByteBuffer(slices, n);
}

grpc::ByteBuffer WriteSpecializeResponse(const coop::v1::Artifact& artifact,
                                         const SharedBytes& ltoir, const SharedBytes& bitcode) {
  const EncodedResponse encoded =
      EncodeSpecializeResponse(artifact, ltoir.bytes.size(), bitcode.bytes.size());
  return AssembleSpecializeResponse(encoded.head, ltoir, encoded.bitcode_framing, bitcode);
}

}  // namespace coopd

// reply_writer: the wire bytes of a SpecializeResponse whose large bytes fields (the LTO-IR and
// the bitcode) are referenced, not copied.
//
// A memory hit's bytes live in the memory tier's shared value (shared_ptr<const CacheValue>).
// Copying them into an Artifact and serializing that message copies 135 KB twice per hit; here
// the rest of the artifact is serialized by protobuf and the large fields follow it as gRPC
// slices that hold a reference to the shared value, with their wire framing (tag, length, the
// enclosing messages' lengths) written by hand. Protobuf parses fields in any order, and a
// singular message field that occurs twice is merged, so the bytes parse to exactly the message
// the normal serialization gives (tests/unit/server/rpc/reply_writer_test.cc compares them).
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <string>
#include <string_view>

#include "coop/v1/coop.pb.h"

namespace coopd {

// Bytes a reply references instead of copying: `bytes` stays valid while `owner` lives (the
// reply's slices each keep a reference to it until gRPC has sent them).
struct SharedBytes {
  std::shared_ptr<const void> owner;
  std::string_view bytes;
};

// The encoded SpecializeResponse{artifact}, with Artifact.ltoir = `ltoir` and
// Artifact.bitcode.data = `bitcode` where those are not empty (`artifact` must then leave that
// field empty). With both empty it is artifact's normal serialization inside the response.
grpc::ByteBuffer WriteSpecializeResponse(const coop::v1::Artifact& artifact,
                                         const SharedBytes& ltoir = {},
                                         const SharedBytes& bitcode = {});

// The protobuf wire framing the writer uses (exposed for its tests): a length-delimited
// field's tag and length, appended to `out`.
void AppendLengthDelimitedHeader(std::string* out, int field, size_t length);

}  // namespace coopd

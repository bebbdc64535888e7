// reply_writer: the wire bytes of a SpecializeResponse whose large bytes fields (the LTO-IR and
// the bitcode) are referenced, not copied.
//
// A memory hit's bytes live in the memory tier's shared value (shared_ptr<const CacheValue>).
// Copying them into an Artifact and serializing that message copies 135 KB twice per hit; here
// the reply's encoded pieces (server/service/memory_reply.h: the response's framing and the
// artifact without its large bytes, then the large fields' framing) are copied into slices, and
// the large bytes follow as gRPC slices that hold a reference to the shared value.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <string>
#include <string_view>

#include "coop/v1/coop.pb.h"
#include "server/service/memory_reply.h"

namespace coopd {

// Bytes a reply references instead of copying: `bytes` stays valid while `owner` lives (the
// reply's slices each keep a reference to it until gRPC has sent them).
struct SharedBytes {
  std::shared_ptr<const void> owner;
  std::string_view bytes;
};

// The reply whose pieces are `head`, `ltoir`, `bitcode_framing` and `bitcode`, in that order
// (EncodeSpecializeResponse's layout); `head` and `bitcode_framing` are copied, the others
// referenced.
grpc::ByteBuffer AssembleSpecializeResponse(std::string_view head, const SharedBytes& ltoir,
                                            std::string_view bitcode_framing,
                                            const SharedBytes& bitcode);

// The encoded SpecializeResponse{artifact}, with Artifact.ltoir = `ltoir` and
// Artifact.bitcode.data = `bitcode` where those are not empty (`artifact` must then leave that
// field empty). With both empty it is artifact's normal serialization inside the response.
grpc::ByteBuffer WriteSpecializeResponse(const coop::v1::Artifact& artifact,
                                         const SharedBytes& ltoir = {},
                                         const SharedBytes& bitcode = {});

}  // namespace coopd

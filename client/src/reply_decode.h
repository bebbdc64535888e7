// reply_decode.h: a Specialize reply as the client holds it (reply_reader.h) decoded into the
// coop::Artifact that Client::Specialize and SpecializeBundle return. Internal to the client
// library.
#pragma once

#include <memory>

#include "coop/client.h"
#include "reply_reader.h"

namespace coop::internal {

// The artifact of a reply: the metadata copied, the large fields (LTO-IR, bitcode, link inputs)
// shared with the reply (or with the held reply a digest-only one was filled from).
Artifact FromReply(const std::shared_ptr<const Reply>& reply);

}  // namespace coop::internal

// cache_key.h: the content-hash key of an artifact, with every input named.
//
// key = sha256 over length-prefixed fields: schema version, canonical request, rendered source,
// the full semantic option list, NVRTC and nvJitLink versions, and the header digest (CCCL tree
// + coopd's device headers). Every component is kept, so a surprising miss can be explained.
#pragma once

#include <string>
#include <vector>

#include "server/toolchain.h"

namespace coopd {

// Bump when the key derivation or the canonical encoding changes.
inline constexpr char kKeySchema[] = "coopd-key-v1";

struct KeyComponents {
  std::string schema;
  std::string canonical_request;  // CanonicalEncoding(spec)
  std::string source_digest;      // sha256(rendered source)
  std::string options;            // options joined by ' '
  std::string nvrtc_version;
  std::string nvjitlink_version;
  std::string header_digest;
  std::string key;  // the hex digest over all of the above
};

KeyComponents ComputeKey(const std::string& canonical_request, const std::string& source,
                         const std::vector<std::string>& options, const Toolchain& tc);

}  // namespace coopd

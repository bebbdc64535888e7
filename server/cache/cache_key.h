// cache_key.h: the content-hash key of an artifact, with every input named.
//
// key = sha256 over length-prefixed fields: schema version, canonical request, rendered source,
// the full semantic option list, NVRTC and nvJitLink versions, and the header digest (the CCCL
// tree NVRTC sees + coopd's embedded device headers). Every component is kept and stored with
// the entry, so a surprising miss can be explained component by component.
#pragma once

#include <string>
#include <vector>

#include "coop/v1/coop.pb.h"
#include "server/toolchain/toolchain.h"

namespace coopd {

// Bump when the key derivation or the canonical encoding changes, or what an artifact says
// that its rendered source does not cover (entry descriptions): cached artifacts carry it.
inline constexpr char kKeySchema[] = "coopd-key-v2";

struct KeyComponents {
  std::string schema;
  std::string canonical_request;  // CanonicalEncoding(spec), or a bundle's encoding
  std::string source_digest;      // sha256(rendered source)
  std::string options;            // options joined by ' '
  std::string nvrtc_version;
  std::string nvjitlink_version;
  std::string header_digest;  // sha256(cccl_digest, device_digest)
  std::string cccl_digest;
  std::string cuda_digest;
  std::string device_digest;
  std::string key;  // the hex digest over all of the above

  // Named components with their digests (for explain and for storing beside the entry).
  coop::v1::KeyComponents ToProto() const;
  std::string RequestDigest() const;  // sha256(canonical_request): finds other keys for it
};

KeyComponents ComputeKey(const std::string& canonical_request, const std::string& source,
                         const std::vector<std::string>& options, const Toolchain& tc);

// Names of the components whose digests differ (or that only one side has).
std::vector<std::string> DifferingComponents(const coop::v1::KeyComponents& a,
                                             const coop::v1::KeyComponents& b);

}  // namespace coopd

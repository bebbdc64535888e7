// cache_key.h: the content-hash key of an artifact, with every input named.
//
// key = sha256 over length-prefixed fields: schema version, canonical request, rendered source,
// the full semantic option list, NVRTC and nvJitLink versions, and the header digest (the CCCL
// tree NVRTC sees + coopd's embedded device headers). Every component is kept and stored with
// the entry, so a surprising miss can be explained component by component.
//
// An LLVM bitcode artifact (the clang backend) has a key of its own, never equal to an LTO-IR
// key: its own schema constant and a `format` component, clang's option lists (both steps) and
// clang's identity (version and path) instead of NVRTC's and nvJitLink's versions, and the same
// header digest. Only bitcode keys name clang, so an LTO-IR key does not depend on it.
#pragma once

#include <string>
#include <vector>

#include "coop/v1/coop.pb.h"
#include "server/toolchain/toolchain.h"

namespace coopd {

// Bump when the key derivation or the canonical encoding changes, or what an artifact says
// that its rendered source does not cover (entry descriptions): cached artifacts carry it.
inline constexpr char kKeySchema[] = "coopd-key-v2";
// The same for bitcode keys; bump also when the bitcode pipeline changes what it makes of clang's
// output (engine/llvm_ir.h, the assemble step's options).
inline constexpr char kBitcodeKeySchema[] = "coopd-bitcode-key-v1";

struct KeyComponents {
  std::string format;  // "ltoir" or "bitcode"
  std::string schema;
  std::string canonical_request;  // CanonicalEncoding(spec), or a bundle's encoding
  std::string source_digest;      // sha256(rendered source)
  std::string options;            // options joined by ' '
  std::string nvrtc_version;      // LTO-IR keys
  std::string nvjitlink_version;  // LTO-IR keys
  std::string clang;              // bitcode keys: ClangToolchain::Identity()
  std::string header_digest;      // sha256(cccl_digest, device_digest)
  std::string cccl_digest;
  std::string cuda_digest;
  std::string device_digest;
  std::string key;  // the hex digest over all of the above

  // Named components with their digests (for explain and for storing beside the entry).
  coop::v1::KeyComponents ToProto() const;
  // Finds other keys for the same request and format: sha256(canonical_request) for LTO-IR,
  // sha256("format=bitcode\n" + canonical_request) for bitcode.
  std::string RequestDigest() const;
};

KeyComponents ComputeKey(const std::string& canonical_request, const std::string& source,
                         const std::vector<std::string>& options, const Toolchain& tc);

// The key of the bitcode clang makes of `source`: `options` (ClangSemanticOptions) and
// `assemble_options` (ClangAssembleOptions) are the two steps' option lists.
KeyComponents ComputeBitcodeKey(const std::string& canonical_request, const std::string& source,
                                const std::vector<std::string>& options,
                                const std::vector<std::string>& assemble_options,
                                const Toolchain& tc);

// Names of the components whose digests differ (or that only one side has).
std::vector<std::string> DifferingComponents(const coop::v1::KeyComponents& a,
                                             const coop::v1::KeyComponents& b);

}  // namespace coopd

// coop/artifact.h: what Client::Specialize and Client::Link return: the artifact's bytes
// (Bytes, shared rather than copied), its entries, toolchain and formats, the parts of a
// bundle, and the link request and result. Part of the public API; coop/client.h includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coop/spec.h"

namespace coop {

enum class Origin { kUnspecified, kCompiled, kMemory, kDisk, kRemote };
const char* OriginName(Origin origin);  // "compiled", "memory", "disk", "remote"

// An artifact's bytes (LTO-IR, bitcode): immutable, and shared by every copy instead of
// copied. Copying a Bytes, or an Artifact, copies a reference; the bytes live as long as any
// copy does. The client hands out the bytes it received without copying them again: a memory
// hit's LTO-IR is the reply's own buffer, and an artifact served from the client's artifact
// cache (ClientOptions::artifact_cache_*) shares the cached one. Reads like a std::string_view
// (data, size, empty, begin, end, comparisons); converts to a std::string (a copy: str(), or
// implicitly, for code that takes strings).
class Bytes {
 public:
  Bytes() = default;
  // Takes the string's bytes (no copy).
  Bytes(std::string bytes);  // NOLINT(google-explicit-constructor): a string is bytes
  Bytes(const char* text) : Bytes(std::string(text)) {}  // NOLINT(google-explicit-constructor)
  // A view of memory that `owner` keeps alive (the view must stay valid while owner lives).
  Bytes(std::shared_ptr<const void> owner, std::string_view view)
      : owner_(std::move(owner)), view_(view) {}

  const char* data() const { return view_.data(); }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  const char* begin() const { return view_.data(); }
  const char* end() const { return view_.data() + view_.size(); }
  char operator[](size_t i) const { return view_[i]; }
  std::string_view view() const { return view_; }
  operator std::string_view() const { return view_; }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view_); }
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  // Drops this reference (the bytes are freed with the last one).
  void clear() { *this = Bytes(); }

  friend bool operator==(const Bytes& a, const Bytes& b) { return a.view_ == b.view_; }
  friend bool operator==(const Bytes& a, std::string_view b) { return a.view_ == b; }
  friend bool operator==(std::string_view a, const Bytes& b) { return a == b.view_; }
  friend bool operator==(const Bytes& a, const std::string& b) { return a.view_ == b; }
  friend bool operator==(const std::string& a, const Bytes& b) { return a == b.view_; }
  friend bool operator==(const Bytes& a, const char* b) { return a.view_ == b; }
  friend bool operator!=(const Bytes& a, const Bytes& b) { return !(a == b); }
  friend bool operator!=(const Bytes& a, std::string_view b) { return !(a == b); }
  friend bool operator!=(std::string_view a, const Bytes& b) { return !(a == b); }
  friend bool operator!=(const Bytes& a, const std::string& b) { return !(a == b); }
  friend bool operator!=(const std::string& a, const Bytes& b) { return !(a == b); }
  friend bool operator!=(const Bytes& a, const char* b) { return !(a == b); }

 private:
  std::shared_ptr<const void> owner_;
  std::string_view view_;
};
// For test frameworks (GoogleTest finds it): the size and the first bytes in hex, not 135 KB of
// binary. To write the bytes themselves: out.write(bytes.data(), bytes.size()).
void PrintTo(const Bytes& bytes, std::ostream* out);

struct Entry {
  std::string symbol;
  std::string declaration;
  std::string description;
};

struct Toolchain {
  std::string nvrtc_version;
  std::string nvjitlink_version;
  std::string cccl_version;
  std::string header_digest;
  // The clang that made the bitcode (artifacts carrying bitcode; in Stats, the daemon's clang, or
  // empty when it has none): "Debian clang version 22.1.8 (1~deb12u1) at /usr/bin/clang++-22".
  std::string clang_version;
  // The name of the CCCL (CcclInfo::name) the artifact was compiled against ("toolkit",
  // "default", or a configured name); in Stats, the daemon's default's.
  std::string cccl_name;
};

// The formats a request asks for. LTO-IR (NVRTC -dlto) links with nvJitLink; LLVM bitcode
// (clang, the same unit compiled as CUDA) links as a bitcode library (CuTe DSL). Each is a cache
// entry of its own; the entries, their declarations and the temp storage are the same for both.
// Bitcode needs clang on the daemon's machine (kFailedPrecondition names the package without).
enum class Formats { kLtoIr, kBitcode, kBoth };

// Code an artifact needs at link time besides its own (one per user operator).
struct ArtifactLinkInput {
  std::string symbol;  // the extern "C" function it defines
  std::string key;     // cache key of the compiled operator; empty for frontend-supplied LTO-IR
  Bytes ltoir;         // when the artifact carries LTO-IR
  Bytes bitcode;       // when the artifact carries bitcode (the operator by clang)
  std::string bitcode_key;  // cache key of that bitcode
};

// An artifact's LLVM bitcode (requested with Formats::kBitcode or kBoth).
struct BitcodeModule {
  std::string key;  // its own cache key
  Bytes data;       // empty when not requested
  Origin origin = Origin::kUnspecified;
  double compile_ms = 0;
  std::string compile_log;
  std::string pch_status;  // clang's precompiled header: "created", "used", "off", ...
};

// What algorithm "auto" chose and why (docs/tuning.md); `requested` is empty when the spec did
// not ask for "auto".
struct AlgorithmChoice {
  std::string requested;                    // "auto"
  std::string chosen;                       // the concrete algorithm (the resolved spec's)
  std::string reason;                       // the table cell and its numbers, or the fallback rule
  std::string table_version, table_digest;  // empty: no table for the arch
};

// One spec's share of an artifact (a bundle has several, in request order).
struct ArtifactPart {
  Spec spec;  // resolved: defaults filled in
  std::vector<Entry> entries;
  uint64_t temp_storage_bytes = 0;
  uint64_t temp_storage_align = 0;
  AlgorithmChoice algorithm_choice;  // when this part's spec asked for "auto"
};

// key, origin, compile_ms, compile_log and pch_status describe the LTO-IR when the artifact
// carries it, else the bitcode (equal to bitcode's then).
struct Artifact {
  std::string key;
  Bytes ltoir;                 // empty when only bitcode was requested
  std::vector<Entry> entries;  // every part's entries
  // For a single-spec artifact, parts[0]'s values (0 for a bundle: see parts).
  uint64_t temp_storage_bytes = 0;
  uint64_t temp_storage_align = 0;
  std::string arch;
  Toolchain toolchain;
  Spec spec;  // single-spec artifact: the resolved spec
  double compile_ms = 0;
  std::string compile_log;
  std::string source;
  Origin origin = Origin::kUnspecified;
  std::vector<ArtifactPart> parts;
  std::string pch_status;  // "created", "used" (warm worker), "off", ...
  double layout_ms = 0;    // the layout query's cost on top of compile_ms
  // Link these with `ltoir` (coopd's Link does so by itself).
  std::vector<ArtifactLinkInput> link_inputs;
  // Definitions of the user types the declarations name; paste them before the declarations.
  std::string type_definitions;
  BitcodeModule bitcode;             // when requested
  AlgorithmChoice algorithm_choice;  // single-spec artifact: parts[0]'s
};

enum class LinkInputKind { kLtoIr, kPtx };

struct LinkModule {
  LinkInputKind kind = LinkInputKind::kLtoIr;
  std::string name;  // for the linker log
  std::string data;  // bytes
};

struct LinkRequest {
  std::string arch;                        // "sm_90"
  std::vector<LinkModule> modules;         // the frontend's kernel(s)
  std::vector<std::string> artifact_keys;  // artifacts in coopd's cache (Artifact::key)
  std::vector<std::string> options;        // extra nvJitLink options, e.g. "-lineinfo"
  bool keep_unused_variables = false;      // default links with -optimize-unused-variables
};

struct LinkResult {
  std::string cubin;  // bytes
  std::string key;
  Origin origin = Origin::kUnspecified;
  double link_ms = 0;
  std::vector<std::string> options;  // the full nvJitLink option list used
};

}  // namespace coop

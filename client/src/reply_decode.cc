// reply_decode.cc: coop::Bytes (the shared, immutable bytes of an artifact) and the decoding
// of a Specialize reply into a coop::Artifact whose large fields share the reply's bytes
// (reply_decode.h).
#include "reply_decode.h"

#include <ostream>
#include <string>

#include "proto_convert.h"

namespace coop {

Bytes::Bytes(std::string bytes) {
  if (bytes.empty()) return;
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  view_ = *owned;
  owner_ = std::move(owned);
}

void PrintTo(const Bytes& bytes, std::ostream* out) {
  static const char kHex[] = "0123456789abcdef";
  std::string head;
  for (size_t i = 0; i < bytes.size() && i < 16; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    head += kHex[c >> 4];
    head += kHex[c & 15];
  }
  *out << "Bytes(" << bytes.size() << " bytes" << (bytes.empty() ? "" : ": ") << head
       << (bytes.size() > 16 ? "...)" : ")");
}

namespace internal {
namespace {

// Bytes over a string that `owner` holds (no copy); empty without keeping `owner`.
Bytes Share(const std::shared_ptr<const void>& owner, const std::string& bytes) {
  return bytes.empty() ? Bytes() : Bytes(owner, bytes);
}

}  // namespace

Artifact FromReply(const std::shared_ptr<const Reply>& reply) {
  const v1::Artifact& a = reply->artifact;
  const Reply& held = reply->bytes();
  const std::shared_ptr<const void> owner =
      reply->bytes_from ? std::shared_ptr<const void>(reply->bytes_from) : reply;
  // A digest-only reply leaves out what the key fixes (SpecializeResponse's bytes_omitted):
  // that comes from the held reply, the rest (origin, timings, choices) from this one.
  const v1::Artifact& content = held.artifact;
  Artifact out;
  out.key = a.key();
  out.ltoir = held.ltoir;
  for (const auto& e : content.entries())
    out.entries.push_back({e.symbol(), e.declaration(), e.description()});
  out.temp_storage_bytes = a.temp_storage().bytes();
  out.temp_storage_align = a.temp_storage().align();
  out.arch = a.arch();
  out.toolchain = FromProto(content.toolchain());
  out.spec = FromProto(content.spec());
  out.compile_ms = a.compile_ms();
  out.compile_log = content.compile_log();
  out.source = content.source();
  out.origin = FromProto(a.origin());
  for (int i = 0; i < a.parts_size(); ++i) {
    const auto& p = a.parts(i);
    const auto& fixed = i < content.parts_size() ? content.parts(i) : p;
    ArtifactPart part;
    part.spec = FromProto(fixed.spec());
    for (const auto& e : fixed.entries()) {
      part.entries.push_back({e.symbol(), e.declaration(), e.description()});
    }
    part.temp_storage_bytes = p.temp_storage().bytes();
    part.temp_storage_align = p.temp_storage().align();
    part.algorithm_choice = FromProto(p.algorithm_choice());
    out.parts.push_back(std::move(part));
  }
  out.pch_status = a.pch_status();
  out.layout_ms = a.layout_ms();
  for (int i = 0; i < a.link_inputs_size(); ++i) {
    const auto& in = a.link_inputs(i);
    const auto& in_bytes = i < content.link_inputs_size() ? content.link_inputs(i) : in;
    out.link_inputs.push_back({in.symbol(), in.key(), Share(owner, in_bytes.ltoir()),
                               Share(owner, in_bytes.bitcode()), in.bitcode_key()});
  }
  out.type_definitions = content.type_definitions();
  out.algorithm_choice = FromProto(a.algorithm_choice());
  const auto& b = a.bitcode();
  out.bitcode = {b.key(),        Share(owner, content.bitcode().data()), FromProto(b.origin()),
                 b.compile_ms(), content.bitcode().compile_log(),        b.pch_status()};
  return out;
}

}  // namespace internal
}  // namespace coop

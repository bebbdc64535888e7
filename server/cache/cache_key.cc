#include "server/cache/cache_key.h"

#include <map>

#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

// What both formats' keys share: the request, the source and the headers.
KeyComponents Common(const char* format, const char* schema, const std::string& canonical_request,
                     const std::string& source, const Toolchain& tc) {
  KeyComponents k;
  k.format = format;
  k.schema = schema;
  k.canonical_request = canonical_request;
  k.source_digest = Sha256::Hex(source);
  k.header_digest = tc.header_digest;
  k.cccl_digest = tc.cccl_digest;
  k.cuda_digest = tc.cuda_digest;
  k.device_digest = tc.device_digest;
  return k;
}

}  // namespace

KeyComponents ComputeKey(const std::string& canonical_request, const std::string& source,
                         const std::vector<std::string>& options, const Toolchain& tc) {
  KeyComponents k = Common("ltoir", kKeySchema, canonical_request, source, tc);
  k.options = StrJoin(options, " ");
  k.nvrtc_version = tc.NvrtcVersion();
  k.nvjitlink_version = tc.NvJitLinkVersion();

  Sha256 h;
  h.UpdateField(k.schema);
  h.UpdateField(k.canonical_request);
  h.UpdateField(source);
  h.UpdateField(std::to_string(options.size()));
  for (const auto& o : options) h.UpdateField(o);
  h.UpdateField(k.nvrtc_version);
  h.UpdateField(k.nvjitlink_version);
  h.UpdateField(k.header_digest);
  k.key = h.FinishHex();
  return k;
}

KeyComponents ComputeBitcodeKey(const std::string& canonical_request, const std::string& source,
                                const std::vector<std::string>& options,
                                const std::vector<std::string>& assemble_options,
                                const Toolchain& tc) {
  KeyComponents k = Common("bitcode", kBitcodeKeySchema, canonical_request, source, tc);
  k.options = StrCat(StrJoin(options, " "), " | ", StrJoin(assemble_options, " "));
  k.clang = tc.clang.Identity();

  Sha256 h;
  h.UpdateField(k.schema);
  h.UpdateField("format=bitcode");
  h.UpdateField(k.canonical_request);
  h.UpdateField(source);
  h.UpdateField(std::to_string(options.size()));
  for (const auto& o : options) h.UpdateField(o);
  h.UpdateField(std::to_string(assemble_options.size()));
  for (const auto& o : assemble_options) h.UpdateField(o);
  h.UpdateField(k.clang);
  h.UpdateField(k.header_digest);
  k.key = h.FinishHex();
  return k;
}

std::string KeyComponents::RequestDigest() const {
  if (format == "bitcode") return Sha256::Hex("format=bitcode\n" + canonical_request);
  return Sha256::Hex(canonical_request);
}

coop::v1::KeyComponents KeyComponents::ToProto() const {
  coop::v1::KeyComponents out;
  auto add = [&](const char* name, const std::string& value, const std::string& digest) {
    auto* c = out.add_components();
    c->set_name(name);
    c->set_value(value);
    c->set_digest(digest);
  };
  const bool bitcode = format == "bitcode";
  add("schema", schema, Sha256::Hex(schema));
  if (bitcode) add("format", format, Sha256::Hex(format));
  add("canonical_request", canonical_request, Sha256::Hex(canonical_request));
  add("source", "", source_digest);
  add("options", options, Sha256::Hex(options));
  if (bitcode) {
    add("clang", clang, Sha256::Hex(clang));
  } else {
    add("nvrtc", nvrtc_version, Sha256::Hex(nvrtc_version));
    add("nvjitlink", nvjitlink_version, Sha256::Hex(nvjitlink_version));
  }
  add("cccl_headers", "", cccl_digest);
  add("cuda_headers", "", cuda_digest);
  add("device_headers", "", device_digest);
  return out;
}

std::vector<std::string> DifferingComponents(const coop::v1::KeyComponents& a,
                                             const coop::v1::KeyComponents& b) {
  std::map<std::string, std::string> left;
  for (const auto& c : a.components()) left[c.name()] = c.digest();
  std::vector<std::string> out;
  for (const auto& c : b.components()) {
    auto it = left.find(c.name());
    if (it == left.end() || it->second != c.digest()) out.push_back(c.name());
    if (it != left.end()) left.erase(it);
  }
  for (const auto& [name, digest] : left) out.push_back(name);
  return out;
}

}  // namespace coopd
